"""The stack's `monitoring:` key: its node exists, Prometheus there reaches what it scrapes, and its
ports and units are claimed on their nodes like everything else's. Each case is one ConfigError
naming the key path and the fix, on both paths."""

from __future__ import annotations

from tests.unit.config.stacks import P, both_paths_error, load_engine_path, shipped_doc


def monitored(node: str = "spark-1a32", **more) -> dict:
    doc = shipped_doc("spark-duo")
    doc["config"][P + "monitoring"] = {"node": node, **more}
    return doc


def test_the_shipped_stack_declares_it_with_the_default_windows():
    spec = load_engine_path(shipped_doc("spark-duo")["config"])
    assert spec.monitoring.node == "spark-1a32" and spec.monitoring.alerts.wedged_s == 300


def test_an_unknown_node(tmp_path):
    both_paths_error(tmp_path, monitored("spark-9999"), P + "monitoring.node", "unknown node 'spark-9999'",
                     "fix: use one of")


def test_prometheus_port_taken_by_the_gateway(tmp_path):
    both_paths_error(tmp_path, monitored(port=4000), P + "monitoring.port", "port 4000 on node 'spark-1a32'",
                     "the gateway's port", "fix: give each its own port (e.g. port:")


def test_the_exporter_port_is_claimed_on_every_node(tmp_path):
    both_paths_error(tmp_path, monitored(exporter_port=8000), P + "monitoring.exporter_port",
                     "port 8000 on node 'spark-1a32'", "API port of deployment 'qwen35'", "fix: give each its own port")


def test_an_engine_on_loopback_of_another_node(tmp_path):
    doc = monitored("spark-5be3")
    doc["config"][P + "deployments"][0]["bind"] = "127.0.0.1"
    doc["config"].pop(P + "gateway")
    both_paths_error(tmp_path, doc, P + "deployments[0].bind", "reachable only on its head 'spark-1a32'",
                     "Prometheus runs on 'spark-5be3'", "fix: bind 0.0.0.0")


def test_a_scrape_interval_the_rates_cannot_use(tmp_path):
    both_paths_error(tmp_path, monitored(scrape_interval_s=60), P + "monitoring.scrape_interval_s", "30")
