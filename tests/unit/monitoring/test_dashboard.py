"""The Grafana dashboard reads recorded series only: each panel's query is one series that the
stack's rules record (its name and labels), and each recorded series has its panel."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from components.monitoring.dashboard import dashboard_text
from components.monitoring.rules import rules_text
from tests.unit.monitoring.exposition import REPO, spec

SHIPPED = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (REPO / "stacks").glob("Pulumi.*.yaml"))
SELECTOR = re.compile(r'(?P<name>[a-zA-Z_:][\w:]*)\{(?P<labels>[^{}]*)\}')


def recorded_series(stack: str) -> list[tuple[str, tuple]]:
    """(name, labels) of every recording rule of the stack's rule file."""
    groups = yaml.safe_load(rules_text(stack, spec(stack)))["groups"]
    return sorted((r["record"], tuple(sorted(r["labels"].items()))) for g in groups for r in g["rules"] if "record" in r)


def queried_series(stack: str) -> list[tuple[str, tuple]]:
    """(name, labels) of every panel's query; a query that is not one plain selector fails."""
    out = []
    for panel in json.loads(dashboard_text(stack, spec(stack)))["panels"]:
        for target in panel.get("targets", []):
            m = SELECTOR.fullmatch(target["expr"])
            assert m, f"panel {panel['title']!r}: {target['expr']!r} is not one selector of a recorded series"
            labels = dict(pair.split("=", 1) for pair in m["labels"].split(","))
            out.append((m["name"], tuple(sorted((k, json.loads(v)) for k, v in labels.items()))))
    return sorted(out)


@pytest.mark.parametrize("stack", SHIPPED)
def test_every_panel_reads_a_recorded_series_and_every_recorded_series_has_its_panel(stack):
    queried, recorded = queried_series(stack), recorded_series(stack)
    assert not [q for q in queried if q not in recorded], "panels query series the rules do not record"
    assert queried == recorded, "one panel per recorded series"


def test_the_check_sees_a_name_the_rules_do_not_record():
    """llama.cpp records no time to first token: a panel for it would read nothing."""
    recorded = recorded_series("lab")
    assert ("bws:ttft_seconds:p95", (("deployment", "tiny"), ("stack", "lab"))) in recorded
    assert ("bws:ttft_seconds:p95", (("deployment", "tiny-gguf"), ("stack", "lab"))) not in recorded


def test_panels_do_not_overlap():
    cells = [(x, y) for p in json.loads(dashboard_text("lab", spec("lab")))["panels"]
             for g in [p["gridPos"]] for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])]
    assert len(cells) == len(set(cells))
