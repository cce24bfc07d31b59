"""The hand-written lab graph of fixtures.py is the program's: the same steps, of the same kind,
under the same components, declaring the same sentences and waiting for the same steps, as
ServingStack registers them for data/Pulumi.lab.yaml under Pulumi's mocks. So the todo tests
read what the components really declare."""

from __future__ import annotations

import pytest

from components.config import load_stack_file
from components.todo.plan import urn_name, urn_types

from tests.unit import mocked
from . import fixtures
from .conftest import DATA


def _lab(tmp_path, bandwidth: bool):
    text = (DATA / "Pulumi.lab.yaml").read_text()
    if bandwidth:
        anchor = "    infiniband_device: false\n"
        assert anchor in text
        text = text.replace(anchor, anchor + "    bandwidth_check: {}\n")
    path = tmp_path / "Pulumi.lab.yaml"
    path.write_text(text)
    return load_stack_file(path)


def _program(spec) -> dict[str, tuple]:
    """name → (kind, parent's types (its parent's and its own), parent's name, StepInfo, deps)."""
    snap = mocked.snapshot("lab", spec=spec)
    infos = {mocked.resolved(res.urn): info for node in snap.serving.nodes.values() for res, info in node.steps}
    by_name = {urn_name(urn): info for urn, info in infos.items()}
    assert len(by_name) == len(infos)
    return {r.name: (r.type.split(":")[1], list(urn_types(r.parent)), urn_name(r.parent), by_name[r.name],
                     {urn_name(d) for d in r.depends_on})
            for r in snap.steps()}


def _table(components: dict, commands: dict) -> dict[str, tuple]:
    def chain(component):
        types = []
        while component is not None:
            types.insert(0, components[component][0])
            component = components[component][1]
        return types[-2:]
    return {name: (c.kind, chain(c.parent), c.parent.split("#")[0], c.step, set(c.deps)) for name, c in commands.items()}


@pytest.mark.parametrize("bandwidth", [False, True], ids=["lab", "lab-with-bandwidth-check"])
def test_the_fixture_graph_is_the_programs(tmp_path, bandwidth):
    program = _program(_lab(tmp_path, bandwidth))
    table = _table(*fixtures.with_bandwidth_check()) if bandwidth else _table(fixtures.COMPONENTS, fixtures.COMMANDS)
    assert sorted(table) == sorted(program)
    for name in program:
        assert table[name] == program[name], name
