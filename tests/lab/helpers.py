"""What the lab tests do on the nodes and with the engine: a command over SSH, a unit's
property, our containers, and `pulumi` on the operator's `lab` stack."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.lab import topology as lab

REPO = lab.REPO_ROOT
STACK = "lab"


def sh(node: lab.Node, command: str, check: bool = True) -> str:
    run = subprocess.run(node.ssh_argv(command), capture_output=True, text=True, timeout=120)
    if check and run.returncode != 0:
        raise AssertionError(f"{node.name}: {command!r} failed: {run.stderr}")
    return run.stdout.strip()


def pulumi(*args: str, timeout: int = 2400, stack: str = STACK, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(["pulumi", *args, "--stack", stack, "--non-interactive"], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=lab.pulumi_env())


def project_with_a_module_moved(tmp_path):
    """A copy of the program in which components/services.py has moved to another module (the
    kind of refactoring an operator's next release brings), on the same backend and stack: the
    state contract says their state must not notice."""
    import shutil
    copy = tmp_path / "moved"
    copy.mkdir()
    for name in ("Pulumi.yaml", "__main__.py", "components", "templates", "stacks"):
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, copy / name)
    (copy / "components" / "services.py").rename(copy / "components" / "foreign_units.py")
    stack_py = copy / "components" / "stack.py"
    stack_py.write_text(stack_py.read_text().replace("from .services import", "from .foreign_units import"))
    (copy / ".venv").symlink_to(REPO / ".venv")
    (copy / "tests").symlink_to(REPO / "tests")
    return copy


def unit_prop(node, unit, prop) -> str:
    return sh(node, f"systemctl show -p {prop} --value {unit}")


def container_ids(node) -> str:
    return sh(node, "docker ps -q --no-trunc --filter name=bws- | sort")


def changes(preview: dict) -> list[tuple[str, str]]:
    return [(s["op"], s["urn"].split("::")[-1]) for s in preview.get("steps", []) if s["op"] != "same"]


def node_state(node: lab.Node) -> str:
    run = subprocess.run(node.ssh_argv("systemctl is-system-running || true"), capture_output=True,
                         text=True, timeout=30)
    return run.stdout.strip() if run.returncode == 0 else "unreachable"


def require_lab(*nodes: lab.Node) -> None:
    """Skip when the lab is not up; in CI, where the lab is always started first, fail."""
    states = {n.name: node_state(n) for n in nodes}
    if any(s not in ("running", "degraded") for s in states.values()):
        message = f"the lab is not up ({states}): run tests/lab/lab up"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
