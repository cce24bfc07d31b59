"""The host's Python makes `.venv` and nothing else. Every other Python tool of ours (pip
downloads, unzipping, build backends) runs from `.venv` at its pinned versions, or inside a
container with pinned inputs: what the host's Python happens to have installed (a build backend,
a pip version) must never decide whether the README's commands work on a bare machine.

Read with the same reader as the host-package test (tests/unit/test_host_packages.py): the command
words of our shell scripts and the argv heads of our Python code."""

from __future__ import annotations

import re

from tests.unit.test_host_packages import REPO, operator_commands, shell_commands

# The one place the host's Python runs, and the one thing it does there.
VENV_MAKER = "scripts/setup-python.sh"
HOST_PYTHON = re.compile(r"^(python3(\.\d+)?|pip3?(\.\d+)?)$")
# `python` is .venv's only once scripts/env.sh has put .venv/bin first on PATH.
ENV_SH = re.compile(r"(?m)^\s*(source|\.)\s+\S*scripts/env\.sh\b")


def host_python_uses(uses: dict[str, set[str]]) -> dict[str, list[str]]:
    """file -> the host-Python commands it runs, outside the venv's creation."""
    found: dict[str, list[str]] = {}
    for command, files in uses.items():
        if HOST_PYTHON.match(command):
            for f in files:
                if f == VENV_MAKER and only_makes_the_venv((REPO / f).read_text()):
                    continue
                found.setdefault(f, []).append(command)
    return found


def only_makes_the_venv(script: str) -> bool:
    lines = [ln for ln in script.splitlines() if re.search(r"(^|[\s;&|(])python3(\.\d+)?\s", ln)
             and not ln.lstrip().startswith("#")]
    return all(re.search(r"\bpython3 -m venv\b", ln) for ln in lines)


def bare_python_without_env(uses: dict[str, set[str]]) -> list[str]:
    """Shell scripts that run `python` without sourcing scripts/env.sh (so it may be the host's)."""
    return sorted(f for f in uses.get("python", set())
                  if f.endswith(".sh") and not ENV_SH.search((REPO / f).read_text()))


def test_the_host_python_only_makes_the_venv():
    found = host_python_uses(operator_commands())
    assert not found, ("the host's Python (or its pip) runs for something else than making .venv; fix: run it "
                       "from .venv ($REPO/.venv/bin/python, pinned by scripts/setup-python.sh) or inside a container:\n"
                       + "\n".join(f"  {f}: {', '.join(sorted(set(c)))}" for f, c in sorted(found.items())))


def test_python_runs_from_the_venv_only_after_env_sh():
    found = bare_python_without_env(operator_commands())
    assert not found, f"`python` run without `source scripts/env.sh` first (it may be the host's): {found}"


def test_the_reader_finds_a_host_python_run():
    """The check can fail: a script that downloads with the host's pip is found and named."""
    script = 'set -e\npython3 -m venv .venv\npython3 -m pip download x\nout=$(pip3 --version)\n'
    uses = {c: {"scripts/x.sh"} for c in shell_commands(script)}
    assert host_python_uses(uses) == {"scripts/x.sh": ["pip3", "python3"]} or \
        host_python_uses(uses) == {"scripts/x.sh": ["python3", "pip3"]}
    assert not only_makes_the_venv(script)
    assert only_makes_the_venv('[ -x v/bin/python ] || python3 -m venv "$venv"\n')
