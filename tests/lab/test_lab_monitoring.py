"""Monitoring on the lab, on the real engine: a one-engine stack (the engine on lab-1) with
`monitoring:` on lab-2, so that Prometheus scrapes the engine and lab-1's exporter across the
management network. After the `up`: Prometheus answers, every target is up (itself, the engine,
both exporters), a few completions make the deployment's decode tok/s recorded series return data
above 0, and every query of the stack's dashboard returns data. The destroy removes Prometheus,
the exporters, their files, and the packages the `up` installed (a package the node already had
stays). Short scrape and evaluation intervals (5 s) keep it to a few minutes.

The packages come from the node's own apt (a real node) or from the lab's rootfs (tests/lab/rootfs.sh
carries them, their units off); a node that has neither fails the `up` with apt's own words."""

from __future__ import annotations

import time

import pytest

from components import names
from components.config.load import load_stack_file
from components.monitoring.dashboard import stack_dashboard
from components.monitoring.deploy import EXPORTER_PACKAGE, PROMETHEUS_PACKAGE
from components.monitoring.promapi import Prometheus, PrometheusError
from components.monitoring.series import DECODE_TOKENS, matchers
from tests.lab import topology as lab
from tests.lab.helpers import (Stack, api_key, base_image_only, completion, destroy_lab_stack, one_node, ours_left,
                               require_lab, sh)
from tests.wait import wait_until

pytestmark = pytest.mark.lab
LAB_STATE = "clean"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE1, NODE2 = lab.nodes(2)
STACK_NAME = "lab-monitoring"
PORT = 9090
SCRAPE_S = 5


def packages_on(node: lab.Node) -> dict[str, str]:
    """Each monitoring package's dpkg status on the node ("" when absent)."""
    return {p: sh(node, f"dpkg-query -W -f '${{Status}}' {p} 2>/dev/null || true")
            for p in (PROMETHEUS_PACKAGE, EXPORTER_PACKAGE)}


@pytest.fixture(scope="module")
def lab_clean():
    require_lab(NODE1, NODE2)
    api_key()
    destroy_lab_stack()


def monitored(c: dict) -> None:
    one_node(c)
    base_image_only(c)
    c["blackwell-serving:monitoring"] = {
        "node": "lab-2", "port": PORT, "scrape_interval_s": SCRAPE_S, "evaluation_interval_s": SCRAPE_S,
        "alerts": {"engine_down_s": 30, "wedged_s": 30, "memory_pressure_s": 30}}


def answers(prom: Prometheus, expr: str) -> list:
    try:
        return prom.query(expr, time.time())
    except PrometheusError:
        return []


def test_prometheus_scrapes_every_target_and_the_dashboard_has_data(lab_clean, tmp_path):
    before = {n.name: packages_on(n) for n in (NODE1, NODE2)}
    stack = Stack(tmp_path, STACK_NAME, monitored)
    spec = load_stack_file(stack.project / "stacks" / f"Pulumi.{STACK_NAME}.yaml")
    try:
        up = stack.run("up", "--yes", "--skip-preview")
        assert up.returncode == 0, up.stdout[-5000:] + up.stderr[-2000:]
        prom = Prometheus(f"http://{NODE2.mgmt_ip}:{PORT}")

        def unhealthy() -> list[str]:
            try:
                targets = prom.targets()
            except PrometheusError as err:
                return [str(err)]
            return [f"{t.labels.get('job')} {t.labels.get('node')}: {t.health} {t.error}"
                    for t in targets if t.health != "up"] or ([] if len(targets) == 4 else [f"{len(targets)} targets"])
        # Itself, the engine, an exporter on each node.
        wait_until(lambda: not unhealthy(), 90, "every target up", seen=unhealthy)
        for t in prom.targets():
            assert t.labels["stack"] == STACK_NAME and t.labels["node"] in ("lab-1", "lab-2"), t.labels

        decode = f"{DECODE_TOKENS.name}{{{matchers(stack=STACK_NAME, deployment='tiny')}}}"

        def decoding() -> bool:
            completion()
            return any(s.value > 0 for s in answers(prom, decode))
        wait_until(decoding, 180, f"{decode} above 0 after completions", seen=lambda: answers(prom, decode),
                   every_s=SCRAPE_S)

        queries = [t.expr for row in stack_dashboard(STACK_NAME, spec).rows for p in row.panels for t in p.targets]
        assert len(queries) >= 8 + 2 * 3, queries   # vLLM's eight series, three per node

        def empty() -> list[str]:
            return [q for q in queries if not answers(prom, q)]
        # The 5-minute percentiles and the node series need a few evaluations.
        wait_until(lambda: not empty(), 120, "every dashboard query returns data", seen=empty, every_s=SCRAPE_S)
    finally:
        stack.destroy()
    for node in (NODE1, NODE2):
        left = ours_left(node)
        assert left == {"unit files": [], "containers": []}, (node.name, left)
        files = sh(node, f"ls -d {names.PROMETHEUS_CONFIG_DIR} {names.PROMETHEUS_DATA_DIR} "
                         f"{names.PACKAGE_RECORDS_DIR}/* 2>/dev/null || true")
        assert files == "", (node.name, files)
        assert packages_on(node) == before[node.name], node.name
