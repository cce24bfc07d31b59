"""Tier 2: every stack's renders equal the reviewed golden files (UPDATE_GOLDEN=1 rewrites them)."""

from __future__ import annotations

import difflib
import os

import pytest

from tests.render.golden import GOLDEN, read_golden, render_stack, write_golden
from tests.unit.mocked import STACKS


@pytest.mark.parametrize("stack", STACKS)
def test_renders_match_golden_files(stack):
    if os.environ.get("UPDATE_GOLDEN") == "1":
        write_golden(stack)
    current, golden = render_stack(stack), read_golden(stack)
    problems = []
    for name in sorted(set(current) | set(golden)):
        if name not in golden:
            problems.append(f"new render {name} has no golden file")
        elif name not in current:
            problems.append(f"golden file {name} is no longer rendered")
        elif current[name] != golden[name]:
            problems.append("".join(difflib.unified_diff(
                golden[name].splitlines(keepends=True), current[name].splitlines(keepends=True),
                f"golden/{stack}/{name}", f"rendered/{stack}/{name}")))
    assert not problems, (f"renders of {stack} differ from {GOLDEN / stack} "
                          f"(if intended: UPDATE_GOLDEN=1 and review the diff)\n" + "\n".join(problems))


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_renders_units_scripts_and_dockerfiles(stack):
    names = render_stack(stack)
    assert any(n.endswith(".service") for n in names)
    assert any(n.endswith(".create.sh") for n in names)
    # The engine: a Dockerfile, or the build of a venv (runtime venv: no image).
    assert any(n.endswith(".Dockerfile") or "-venv-" in n for n in names)
