"""A failing step on the real engine shows one clear block, and nothing else of ours: the upload
of a model directory (the one step on the operator's machine, so the test needs no node) on a
machine whose PATH has no rsync. The whole output of `pulumi up`, then of
`python -m components.todo --up`, holds the step's sentence, its node, the exit status, this
run's log lines and the fix (the Debian package, from scripts/host-packages.txt), once; no Python
traceback (the program leaves quietly when the engine stops it) and no script text (the step's
command line is the remote steps' short one: the script and the key travel on stdin), nor the
key the step was given."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.engine.conftest import REPO, engine_env, one_failure_block, pulumi

SENTENCE = "Upload model tiny from this machine to lab-1"

# The project's program replaced by one node and its upload step, built by the real components,
# leaving as __main__.py does when the engine stops it.
PROGRAM = """
import pulumi
from components.config.schema import NodeSpec
from components.steps.failure import quiet_when_the_engine_stops
from components.resources.node import Node, NodeArgs
from components.steps.remote import upload
from components.steps.ssh import Connection
from components.steps.info import StepInfo

quiet_when_the_engine_stops()
spec = NodeSpec.model_validate({
    "name": "lab-1", "host": "198.18.0.250", "arch": "amd64", "gpu": {"kind": "cpu", "count": 1, "memory_gb": 8},
    "ssh": {"user": "root", "host_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICEvWJmRmEloEL70S2jUEXoPj0Ob7rHWBDbvqcLgNdih"}})
key = open("id_test").read()
node = Node("lab-1", NodeArgs(spec, Connection.of_node(spec, key)))
upload("tiny-upload", node, step=StepInfo("lab-1", "model", do="Upload model tiny from this machine to lab-1"),
       local_dir="model", remote_dir="/var/lib/blackwell-serving/staging/tiny",
       copy_dest="/var/lib/blackwell-serving/models/tiny", parent=node)
node.finish()
"""


def path_without(tmp_path: Path, missing: str) -> str:
    """A PATH with every command of this one but `missing` (links in one folder)."""
    folder = tmp_path / f"path-without-{missing}"
    folder.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for entry in os.listdir(d):
            link = folder / entry
            if entry != missing and not link.exists() and os.access(os.path.join(d, entry), os.X_OK):
                link.symlink_to(os.path.join(d, entry))
    return str(folder)


def check_one_block(output: str, key: str) -> None:
    one_failure_block(output, SENTENCE, "  node:   lab-1 (this step runs on the operator's machine)",
                      "  status: exit 127 (a command was not found: rsync)",
                      "rsync: command not found",  # the log's last lines
                      "  fix:    install the Debian package rsync on this machine (apt-get install rsync",
                      noise=("ssh_opts=(", "--copy-dest", "send a local directory", key.splitlines()[1]))


def test_a_failed_upload_shows_one_block_with_the_fix(project, tmp_path):
    (project / "__main__.py").write_text(PROGRAM)
    (project / "scripts").mkdir()
    shutil.copy2(REPO / "scripts" / "host-packages.txt", project / "scripts" / "host-packages.txt")
    (project / "model").mkdir()
    (project / "model" / "config.json").write_text("{}\n")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(project / "id_test")], check=True)
    key = (project / "id_test").read_text()
    # The todo list reads the stack's file: any valid config (the program above ignores it).
    stack_text = (project / "stacks" / "Pulumi.lab.yaml").read_text()
    (project / "stacks" / "Pulumi.fail.yaml").write_text(stack_text)
    env = {"PATH": path_without(tmp_path, "rsync")}
    assert shutil.which("rsync", path=env["PATH"]) is None
    assert pulumi(project, "stack", "init", "fail", env=env).returncode == 0

    up = pulumi(project, "up", "--yes", "--skip-preview", "--stack", "fail", env=env)
    output = up.stdout + up.stderr
    assert up.returncode != 0, output
    check_one_block(output, key)

    todo = subprocess.run([sys.executable, "-m", "components.todo", "--stack", "fail", "--up",
                           "--work-dir", str(project)], cwd=REPO, env=engine_env(project, env),
                          capture_output=True, text=True, timeout=300)
    output = todo.stdout + todo.stderr
    assert todo.returncode == 1, output
    check_one_block(output, key)
    assert "error: exit 127 (a command was not found: rsync); what failed and the fix: at the end" in output


def test_the_program_leaves_quietly_when_the_engine_stops_it():
    """__main__.py installs the handler before it builds anything."""
    tree = ast.parse((REPO / "__main__.py").read_text())
    calls = [n.value.func.id for n in tree.body
             if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name)]
    assert "quiet_when_the_engine_stops" in calls
