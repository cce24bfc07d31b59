"""A step that fails on a node shows one clear block, on the real engine and the lab: the image
build on lab-1 of a program copy whose build script first calls `pv` (not installed on the lab's
nodes) through the scripts' progress pipe. The whole output of `pulumi up`, and then of
`python -m components.todo --up`, holds the step's sentence, its node, the exit status, this
run's last lines of the step's log file on the node, and the fix (the Debian package to install
on lab-1), once; no Python traceback and no script text. Nothing is stopped (the build fails
before anything that serves is touched); the stack has its own model revision, so that its
destroy removes only its own cache. A one-node variant of the lab stack, as its own stack."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.engine.conftest import one_failure_block
from tests.lab import topology as lab
from tests.lab.helpers import REPO, Stack, api_key, one_node, require_lab, sh

pytestmark = pytest.mark.lab
LAB_STATE = "clean"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE1, NODE2 = lab.nodes(2)
SENTENCE = "Build image vllm-lab on lab-1 (transformers>=5)"
BROKEN = '''{% include "scripts/_prelude.sh.j2" %}
log "checking the build tools"
pv --version 2>&1 | progress
'''


def check_one_block(output: str) -> None:
    one_failure_block(output, SENTENCE, "\n  node:   lab-1\n", "\n  status: exit 127 (a command was not found: pv)\n",
                      "  log:    last lines of /var/log/blackwell-serving/image-", "pv: command not found",
                      "  fix:    install the Debian package pv on lab-1 (apt-get install pv); then run pulumi up again",
                      noise=("Build the derived engine image",))  # the build script's own comment


def test_a_step_that_fails_on_a_node_shows_one_block_with_the_fix(tmp_path):
    require_lab(NODE1, NODE2)
    api_key()
    assert sh(NODE1, "command -v pv || echo absent") == "absent"
    glm = sh(NODE1, f"systemctl is-active {lab.GLM_UNIT} || true")

    def failing(c):
        one_node(c)
        c["blackwell-serving:models"][0]["revision"] = "lab-v1-failure-test"

    stack = Stack(tmp_path, "lab-failure", failing)
    build = stack.project / "templates" / "scripts" / "build-image.sh.j2"
    text = build.read_text()
    assert '{% include "scripts/_prelude.sh.j2" %}\n' in text
    build.write_text(text.replace('{% include "scripts/_prelude.sh.j2" %}\n', BROKEN, 1))
    try:
        up = stack.run("up", "--yes", "--skip-preview")
        assert up.returncode != 0
        check_one_block(up.stdout + up.stderr)

        todo = subprocess.run([sys.executable, "-m", "components.todo", "--stack", stack.name, "--up",
                               "--work-dir", str(stack.project)], cwd=REPO, capture_output=True, text=True,
                              timeout=900, env=stack.env)
        output = todo.stdout + todo.stderr
        assert todo.returncode == 1, output[-6000:]
        check_one_block(output)
        assert "error: exit 127 (a command was not found: pv); what failed and the fix: at the end" in output
        # Nothing that serves was touched.
        assert sh(NODE1, f"systemctl is-active {lab.GLM_UNIT} || true") == glm
    finally:
        stack.destroy()
