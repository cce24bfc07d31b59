"""Generated names are defined once, in components/names.py: no `bws-` literal anywhere else in
components/ or templates/, and the names config/crosscheck.py checks for clashes are the very
units the components create and watch."""

from __future__ import annotations

from pathlib import Path

import pytest

from components import names
from components.config.crosscheck import generated_names
from tests.unit.mocked import snapshot

REPO = Path(__file__).resolve().parents[2]
HOME = REPO / "components" / "names.py"
# Text with the prefix that names nothing on a node.
NOT_NAMES = {
    "templates/scripts/gateway-health.sh.j2": ["Bearer bws-wrong-"],   # a key no client holds
}
SHIPPED = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (REPO / "stacks").glob("Pulumi.*.yaml"))


def prefix_literals(root: Path, pattern: str, repo: Path = REPO) -> list[str]:
    """file:line: text of every line below `root` that holds the prefix, names.py aside."""
    found = []
    for path in sorted(root.rglob(pattern)):
        if path == HOME or not path.is_file():
            continue
        rel = str(path.relative_to(repo))
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for allowed in NOT_NAMES.get(rel, []):
                line = line.replace(allowed, "")
            if names.PREFIX in line:
                found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_no_generated_name_outside_names_py():
    found = prefix_literals(REPO / "components", "*.py") + prefix_literals(REPO / "templates", "*")
    assert found == [], "write these through components/names.py:\n" + "\n".join(found)


def test_the_scan_sees_a_literal(tmp_path):
    (tmp_path / "x.py").write_text(f'unit = "{names.PREFIX}x.service"\n')
    assert prefix_literals(tmp_path, "*.py", repo=tmp_path) == [f'x.py:1: unit = "{names.PREFIX}x.service"']


@pytest.mark.parametrize("stack", SHIPPED)
def test_crosscheck_knows_every_unit_the_stack_watches(stack):
    snap = snapshot(stack)
    checked = {(node, name) for node, kind, name, _, _ in generated_names(snap.spec) if kind == "unit"}
    ours = {(node, unit) for node, watch in snap.watches.items() for unit in watch.units
            if unit.startswith(names.PREFIX)}
    assert ours and ours <= checked, sorted(ours - checked)
