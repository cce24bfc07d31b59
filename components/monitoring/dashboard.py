"""A Grafana dashboard of the recorded series: a row per deployment with a panel per series its
engine records, a row per node with its memory. Its queries read recorded names only
(series.py), so one dashboard serves every engine, and a name an engine lacks gets no panel.

A small typed builder of Grafana's dashboard JSON model (schemaVersion 39) rather than a library:
the four shapes it needs are below, and the project's pins stay as they are. The datasource is a
dashboard variable, so the file imports into any Grafana with a Prometheus source."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from components.config.schema import StackSpec
from components.monitoring.series import NODE_SERIES, Recorded, engine_sources, matchers

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
COLUMNS = 24            # Grafana's grid width
PANEL_W, PANEL_H = 8, 7
PER_LINE = COLUMNS // PANEL_W


@dataclass(frozen=True)
class Target:
    expr: str
    legend: str

    def json(self, ref: str) -> dict:
        return {"refId": ref, "datasource": DATASOURCE, "expr": self.expr, "legendFormat": self.legend}


@dataclass(frozen=True)
class Panel:
    title: str
    description: str
    unit: str
    targets: tuple[Target, ...]

    def json(self, panel_id: int, x: int, y: int) -> dict:
        return {"id": panel_id, "type": "timeseries", "title": self.title, "description": self.description,
                "datasource": DATASOURCE, "gridPos": {"x": x, "y": y, "w": PANEL_W, "h": PANEL_H},
                "fieldConfig": {"defaults": {"unit": self.unit}, "overrides": []},
                "targets": [t.json(chr(ord("A") + i)) for i, t in enumerate(self.targets)]}


@dataclass(frozen=True)
class Row:
    title: str
    panels: tuple[Panel, ...]


@dataclass(frozen=True)
class Dashboard:
    title: str
    uid: str
    rows: tuple[Row, ...]

    def json(self) -> dict:
        """Rows one under the other, each with its panels PER_LINE to a line."""
        panels, y = [], 0
        for row in self.rows:
            panels.append({"id": len(panels) + 1, "type": "row", "title": row.title, "collapsed": False,
                           "gridPos": {"x": 0, "y": y, "w": COLUMNS, "h": 1}, "panels": []})
            y += 1
            for i, p in enumerate(row.panels):
                line, column = divmod(i, PER_LINE)
                panels.append(p.json(len(panels) + 1, column * PANEL_W, y + line * PANEL_H))
            y += math.ceil(len(row.panels) / PER_LINE) * PANEL_H
        return {"title": self.title, "uid": self.uid, "schemaVersion": 39, "editable": True,
                "tags": ["blackwell-serving"], "time": {"from": "now-6h", "to": "now"}, "refresh": "30s",
                "templating": {"list": [{"name": "datasource", "label": "Prometheus", "type": "datasource",
                                         "query": "prometheus"}]},
                "panels": panels}


def panel(r: Recorded, **labels: str) -> Panel:
    return Panel(r.name.removeprefix("bws:"), r.help, r.unit,
                 (Target(f"{r.name}{{{matchers(**labels)}}}", " ".join(labels.values())),))


def stack_dashboard(stack: str, spec: StackSpec) -> Dashboard:
    rows = [Row(f"{d.name} ({d.engine} on {', '.join(d.nodes)})",
                tuple(panel(r, stack=stack, deployment=d.name) for r in engine_sources(d.engine)))
            for d in spec.deployments]
    rows += [Row(f"node {n.name} ({n.gpu.kind})", tuple(panel(r, stack=stack, node=n.name) for r in NODE_SERIES))
             for n in spec.nodes]
    return Dashboard(f"blackwell-serving: {stack}", f"blackwell-serving-{stack}"[:40], tuple(rows))


def dashboard_text(stack: str, spec: StackSpec) -> str:
    return json.dumps(stack_dashboard(stack, spec).json(), indent=2) + "\n"
