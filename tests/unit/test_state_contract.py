"""The state contract: the URN of every resource of every shipped stack. A URN is how the engine
matches the program to an operator's state; a changed URN means every step under it is deleted
and created again on the machines. So a change here must be deliberate: add
`aliases=[pulumi.Alias(...)]` for the old URN (components/steps/types.py says how), then regenerate with
UPDATE_GOLDEN=1."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.mocked import STACKS, snapshot

GOLDEN = Path(__file__).parent / "golden"


def urns(stack: str) -> list[str]:
    from components.config.load import PROJECT
    return sorted(snapshot(stack).recorder.urns(stack, PROJECT))


@pytest.mark.parametrize("stack", STACKS)
def test_urns_of_every_shipped_stack_are_pinned(stack):
    path = GOLDEN / f"urns-{stack}.txt"
    got = urns(stack)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text("".join(u + "\n" for u in got))
    want = path.read_text().splitlines()
    removed, added = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    assert not removed and not added, (
        f"the URNs of stack {stack} changed: an operator's `up` would delete and recreate these steps.\n"
        f"gone: {removed}\nnew: {added}\nIf intended, give the renamed resources aliases of their old "
        f"URNs, then UPDATE_GOLDEN=1 python -m pytest {Path(__file__).relative_to(Path.cwd()) if Path(__file__).is_relative_to(Path.cwd()) else __file__}")


def test_no_step_type_follows_a_python_module():
    """Steps are pulumi-command resources: no dynamic provider, whose type and pickled code would
    follow our module names into the state."""
    for stack in STACKS:
        for urn in urns(stack):
            assert "pulumi-python:dynamic" not in urn, urn
