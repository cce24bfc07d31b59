"""The package's folders are floors: a module imports (at run time) only from its own floor or
the floors below it, so the layout shows the architecture and a lower floor never reaches up.
Type-only imports (`if TYPE_CHECKING:`) may name a higher floor: they never run."""

from __future__ import annotations

from tests.unit.test_import_graph import import_graph

# Bottom first. `names` and `engines` know no stack: the schema (config) draws on both.
FLOORS: tuple[frozenset[str], ...] = tuple(map(frozenset, (
    {"components", "names", "engines"},
    {"config"},
    {"steps"},                                   # a rendered script becomes a step on a node
    {"facts"},                                   # node facts and the program's one probe per node
    {"preflight", "resources", "runtimes"},      # the Pulumi components and their checks
    {"operator", "discover", "todo"},            # around a run, and the CLIs
)))


def floor_of(module: str) -> int:
    room = module.split(".")[1] if "." in module else module
    [floor] = [i for i, rooms in enumerate(FLOORS) if room in rooms]
    return floor


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets if floor_of(t) > floor_of(m))


def test_every_folder_has_a_floor():
    for module in import_graph():
        floor_of(module)          # raises for a folder no floor names


def test_no_module_imports_from_a_floor_above_its_own():
    assert upward_imports(import_graph()) == []


def test_the_check_sees_an_upward_import():
    assert upward_imports({"components.steps.remote": {"components.resources.node"},
                           "components.resources.node": set()}) == ["components.steps.remote -> components.resources.node"]
