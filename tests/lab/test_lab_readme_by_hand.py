"""The README's commands "to work by hand", run exactly as it prints them, in one shell that starts
with none of our variables (as a new terminal would): they find the engine, the backend and the lab
stack's passphrase by themselves. Any state of the lab stack will do (a preview and a todo list
are read-only), so this test needs no converge of its own."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.lab import topology as lab
from tests.lab.helpers import REPO, require_lab

pytestmark = pytest.mark.lab
LAB_STATE = "converged"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

README = REPO / "README.md"


def hand_commands(text: str) -> list[str]:
    """The lines of the first ```sh block after "To work by hand", comments cut."""
    after = text[text.index("To work by hand"):]
    block = re.search(r"```sh\n(.*?)```", after, re.S)
    assert block, "README.md: no ```sh block after 'To work by hand'"
    return [re.sub(r"\s+#.*$", "", ln).strip() for ln in block.group(1).splitlines() if ln.strip()]


def test_the_reader_takes_the_block_as_printed():
    text = "x\nTo work by hand afterwards:\n\n```sh\nsource a.sh lab   # note\nrun --stack lab\n```\n```sh\nno\n```"
    assert hand_commands(text) == ["source a.sh lab", "run --stack lab"]


def test_the_readme_commands_by_hand_work_as_printed():
    require_lab(*lab.nodes(2))
    commands = hand_commands(README.read_text())
    assert any(c.startswith("pulumi ") for c in commands) and any("components.todo" in c for c in commands)
    # A new terminal: none of the engine's or our variables; the host's PATH.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "BLACKWELL_", "VIRTUAL_ENV"))}
    env["PATH"] = ":".join(p for p in env["PATH"].split(":") if not p.startswith(str(REPO)))
    script = "set -e\n" + "".join(f"echo '>>> {c}'\n{c} </dev/null\n" for c in commands)
    run = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, (f"a README command by hand failed (exit {run.returncode}):\n"
                                 f"{run.stdout[-4000:]}\n{run.stderr[-4000:]}")
    assert "incorrect passphrase" not in run.stdout + run.stderr
    for c in commands:
        assert f">>> {c}" in run.stdout, f"not run: {c}"
