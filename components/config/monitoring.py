"""The stack's `monitoring:` key: Prometheus on one node, a node_exporter on every node
(components/resources/monitoring.py), and the windows of the alerts (components/monitoring/alerts.py).

Kept apart from schema.py, which only names MonitoringSpec on StackSpec, as gateway.py is: its
rules live here. Every problem is "key.path: what; fix: how"; load.validate runs them with the
other cross-key checks (checks.py)."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from pydantic import Field

from components.config.fields import Name, Strict, documented
from components.names import NODE_EXPORTER_UNIT, PROMETHEUS_UNIT, TEXTFILE_DIR

if TYPE_CHECKING:
    from components.config.schema import StackSpec

# The rules' rates are over 2 minutes (components/monitoring/series.py): two samples in it at most
# this far apart.
MAX_SCRAPE_INTERVAL_S = 30


class AlertWindows(Strict):
    """How long each alert's condition holds before it fires (Prometheus's `for:`). The defaults
    are the ones docs/monitoring.md argues for; a lab shortens them to see an alert within a test."""

    engine_down_s: int = Field(300, ge=0, le=86400, description="BwsEngineDown: no scrape of the engine answered "
                                                                "for this long")
    wedged_s: int = Field(300, ge=0, le=86400, description="BwsEngineWedged: no progress while requests run, for "
                                                           "this long after the 2-minute rate window saw none")
    memory_pressure_s: int = Field(300, ge=0, le=86400,
                                   description="BwsNodeMemoryPressure: under 10% of a unified-memory node's memory "
                                               "available for this long")


@documented(f"""Prometheus (Debian's `prometheus` package) under a unit of ours ({PROMETHEUS_UNIT}) on
    `node`, scraping every deployment's /metrics, the gateway's and a node_exporter (Debian's
    `prometheus-node-exporter`, unit {NODE_EXPORTER_UNIT}) on every node, each target labelled
    `stack` and `node` (and `deployment` for an engine), with the stack's recording and alerting
    rules (docs/monitoring.md). The exporter reads the watchdogs' counters in {TEXTFILE_DIR} and
    systemd's restarts of our units. A package missing on a node is installed with apt and
    removed on destroy; one that was there stays.""")
class MonitoringSpec(Strict):

    node: Name = Field(description="the node Prometheus runs on")
    port: int = Field(9090, ge=1, le=65535, description="Prometheus's port on its node (its web UI and HTTP API)")
    bind: ipaddress.IPv4Address = Field(ipaddress.IPv4Address("0.0.0.0"), description="Prometheus's listen address")
    exporter_port: int = Field(9100, ge=1, le=65535, description="node_exporter's port on every node")
    scrape_interval_s: int = Field(15, ge=1, le=MAX_SCRAPE_INTERVAL_S,
                                   description="seconds between two scrapes of a target (the rules' 2-minute rates "
                                               "need two samples: 30 at most)")
    evaluation_interval_s: int = Field(30, ge=1, le=300, description="seconds between two evaluations of the rules")
    retention_days: int = Field(15, ge=1, le=3650, description="how long Prometheus keeps its samples")
    alerts: AlertWindows = Field(AlertWindows(), description="how long each alert's condition holds before it fires")


def monitoring_problems(spec: "StackSpec") -> list[str]:
    """Its node exists, and Prometheus there reaches every engine's /metrics and the gateway's.
    (Its ports and unit names are checked with everything else's, crosscheck.py.)"""
    m = spec.monitoring
    if m is None:
        return []
    nodes = [n.name for n in spec.nodes]
    if m.node not in nodes:
        return [f"monitoring.node: unknown node '{m.node}'; fix: use one of {sorted(nodes)}"]
    problems = []
    for i, d in enumerate(spec.deployments):
        if d.bind.is_loopback and d.nodes[0] != m.node:
            problems.append(f"deployments[{i}].bind: {d.bind} is reachable only on its head '{d.nodes[0]}', but "
                            f"Prometheus runs on '{m.node}' and scrapes its /metrics there; fix: bind 0.0.0.0 or "
                            f"the head's address, or move monitoring.node to '{d.nodes[0]}'")
    gw = spec.gateway
    if gw is not None and gw.bind.is_loopback and gw.node != m.node:
        problems.append(f"gateway.bind: {gw.bind} is reachable only on '{gw.node}', but Prometheus runs on "
                        f"'{m.node}'; fix: bind 0.0.0.0, or move monitoring.node to '{gw.node}'")
    return problems
