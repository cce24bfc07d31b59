"""A spec dumped (every field, defaults included) loads again into the same spec, for every
shipped stack: what the program hands on (another program importing the package, a tool that
writes stack files) is itself a valid stack."""

from __future__ import annotations

import pytest

from components.config.schema import StackSpec
from tests.unit.config.stacks import REPO, SHIPPED, load_stack_file


@pytest.mark.parametrize("stack", SHIPPED)
@pytest.mark.parametrize("mode", ["python", "json"])
def test_dump_then_load_gives_the_same_spec(stack, mode):
    spec = load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")
    assert StackSpec.model_validate(spec.model_dump(mode=mode)) == spec
