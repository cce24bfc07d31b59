"""The real Pulumi engine on a throwaway copy of the project: its own file backend, so the
tests never touch the operator's state or write into the committed stack files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROJECT_FILES = ["Pulumi.yaml", "__main__.py", "components", "templates", "stacks"]


def forget_operator_salt(stack_file: Path) -> None:
    """`pulumi stack init` on an operator's machine writes the salt of their passphrase into the
    stack file; a test's stack has its own passphrase, so its copy starts without one."""
    lines = stack_file.read_text().splitlines(keepends=True)
    stack_file.write_text("".join(ln for ln in lines if not ln.startswith("encryptionsalt:")))


def engine_available() -> bool:
    return shutil.which("pulumi") is not None and shutil.which("pulumi-language-python") is not None


def copy_project(tmp_path: Path, source: Path = REPO) -> Path:
    """tmp_path/project: the program, its templates and stacks, with its own empty file backend
    beside it (tmp_path/backend); the virtualenv and tests/ (the lab's keys) are links."""
    copy = tmp_path / "project"
    copy.mkdir()
    for name in PROJECT_FILES:
        src = source / name
        if src.is_dir():
            shutil.copytree(src, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, copy / name)
    for stack_file in (copy / "stacks").glob("Pulumi.*.yaml"):
        forget_operator_salt(stack_file)
    (copy / ".venv").symlink_to(REPO / ".venv")
    (copy / "tests").symlink_to(REPO / "tests")
    (tmp_path / "backend").mkdir()
    return copy


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if not engine_available():
        pytest.fail("the Pulumi engine is not on PATH: run `bash scripts/install-engine.sh` "
                    "and `source scripts/env.sh`")
    return copy_project(tmp_path)


def engine_env(project: Path, env: dict | None = None) -> dict:
    """The environment of a CLI run on the project copy: its own backend and passphrase."""
    full_env = {**os.environ,
                "PULUMI_BACKEND_URL": f"file://{project.parent / 'backend'}",
                "PULUMI_CONFIG_PASSPHRASE": "engine-tests",
                **(env or {})}
    full_env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    return full_env


def pulumi(project: Path, *args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["pulumi", *args, "--non-interactive"], cwd=project, env=engine_env(project, env),
                          capture_output=True, text=True, timeout=timeout)


def preview_json(project: Path, stack: str, env: dict | None = None) -> dict:
    init = pulumi(project, "stack", "init", stack, env=env)
    assert init.returncode == 0, init.stderr
    run = pulumi(project, "preview", "--stack", stack, "--json", env=env)
    assert run.returncode == 0, f"preview failed:\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
    return json.loads(run.stdout)


# What a failed run's output never shows: a Python traceback, the program's RPCs failing after
# the engine stopped it, a step's script (components/steps/failure.py).
NOT_IN_A_FAILURE = ("Traceback", "KeyboardInterrupt", "Resource monitor", "#!/usr/bin/env bash")


def one_failure_block(output: str, sentence: str, *parts: str, noise: tuple[str, ...] = ()) -> str:
    """The one failure block of a run's whole output (components/steps/failure.py), which names the
    step by `sentence` and holds every part; nothing of NOT_IN_A_FAILURE or `noise` anywhere."""
    from components.steps import failure

    found = failure.blocks(output)
    assert len(found) == 1 and output.count(f"{failure.MARKER}{sentence}") == 1, output[-6000:]
    block = found[0]
    assert block.startswith(f"{failure.MARKER}{sentence}\n"), block
    for part in parts:
        assert part in block, f"{part!r} not in:\n{block}"
    for word in (*NOT_IN_A_FAILURE, *noise):
        assert word not in output, f"{word!r} in:\n{output[-6000:]}"
    return block
