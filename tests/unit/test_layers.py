"""The package's folders are floors (components/__init__.py FLOORS, bottom first): a module imports
only from its own folder or the floors below it, at run time and in type checking alike, so the
layout shows the architecture and a lower floor never reaches up. The README's layout line and
docs/extending.md name the floors in the same order."""

from __future__ import annotations

import re

from components import FLOORS
from tests.unit.test_import_graph import REPO, import_graph

ORDER = [name for name, _ in FLOORS]

# The one type-level import that still reaches up: an engine reads a deployment's fields, typed by
# the schema that validates with the engine registry. It goes when each engine owns its options
# as a typed model of its own (issue 36, item 2); it may not grow.
KNOWN_TYPE_LEVEL = ["components.engines -> components.config.schema",
                    "components.engines.base -> components.config.schema"]


def floor_of(module: str) -> int:
    room = module.split(".")[1] if "." in module else module
    return ORDER.index(room)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets if floor_of(t) > floor_of(m))


def test_every_folder_has_a_floor_of_its_own():
    rooms = {m.split(".")[1] if "." in m else m for m in import_graph()}
    assert sorted(rooms) == sorted(ORDER)
    assert len(set(ORDER)) == len(ORDER)


def test_no_module_imports_from_a_floor_above_its_own():
    assert upward_imports(import_graph()) == []


def test_type_checking_imports_reach_up_only_where_known():
    assert upward_imports(import_graph(type_checking=True)) == KNOWN_TYPE_LEVEL


def test_the_check_sees_an_upward_import():
    assert upward_imports({"components.steps.remote": {"components.resources.node"},
                           "components.resources.node": set()}) == ["components.steps.remote -> components.resources.node"]


def floors_named_in(text: str) -> list[str]:
    """The floors a text names as paths (`config/`, `names.py`), in the order it first names each."""
    seen: list[str] = []
    for word in re.findall(r"\b([a-z_]+)(?:/|\.py\b)", text):
        if word in ORDER and word not in seen and word != "components":
            seen.append(word)
    return seen


def test_the_readme_and_the_extending_guide_list_the_floors_in_order():
    readme = next(line for line in (REPO / "README.md").read_text().splitlines() if line.startswith("components/ "))
    guide = (REPO / "docs" / "extending.md").read_text().split("\n\n")[1]
    for where, text in (("README.md's layout line", readme), ("docs/extending.md's floors paragraph", guide)):
        assert floors_named_in(text) == ORDER[1:], f"{where} names the floors out of order; fix: list {ORDER[1:]}"
