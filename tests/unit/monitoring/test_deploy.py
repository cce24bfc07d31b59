"""The monitoring component in the graph of spark-duo (its shipped stack declares it): a
node_exporter on every node after its package, Prometheus on the node named after its package
and its configuration, its gate after it; all of it after what gates anything of ours on a node;
and its units' text (the flags docs/monitoring.md names)."""

from __future__ import annotations

from components import names
from components.monitoring.deploy import EXPORTER_PACKAGE, PROMETHEUS_PACKAGE
from tests.unit.mocked import plain, script_of
from tests.unit.test_graph import closure, dep_names, snap

HEAD, SECOND = "spark-1a32", "spark-5be3"


def unit(s, node: str, unit_name: str):
    [found] = [u for u in s.units if u.node.name == node and u.unit_name == unit_name]
    return found


def test_an_exporter_on_every_node_and_prometheus_on_its_node():
    s = snap("spark-duo")
    placed = sorted((u.node.name, u.unit_name) for u in s.units if u.unit_name in
                    (names.NODE_EXPORTER_UNIT, names.PROMETHEUS_UNIT))
    assert placed == [(HEAD, names.NODE_EXPORTER_UNIT), (HEAD, names.PROMETHEUS_UNIT),
                      (SECOND, names.NODE_EXPORTER_UNIT)]


def test_each_unit_waits_for_its_package_and_prometheus_for_its_configuration():
    s = snap("spark-duo")
    for node in (HEAD, SECOND):
        install = s.by_name(f"monitoring-{node}-node-exporter-install")
        assert f"monitoring-{node}-{EXPORTER_PACKAGE}-package" in dep_names(install)
    packages = {f"monitoring-{HEAD}-{PROMETHEUS_PACKAGE}-package", f"monitoring-{HEAD}-{EXPORTER_PACKAGE}-package"}
    assert packages <= closure(s, f"monitoring-{HEAD}-prometheus-install")
    assert f"monitoring-{HEAD}-prometheus-config" in dep_names(s.by_name(f"monitoring-{HEAD}-prometheus-install"))
    assert f"monitoring-{HEAD}-prometheus-install" in dep_names(s.by_name(f"monitoring-{HEAD}-prometheus-ready"))


def test_nothing_is_installed_before_the_preflight_checks_and_the_retirements():
    s = snap("spark-duo")
    waits = closure(s, f"monitoring-{HEAD}-{EXPORTER_PACKAGE}-package")
    assert f"{HEAD}-vllm-cluster-retire" in waits and f"{HEAD}-resources-check" in waits


def test_the_exporter_reads_the_watchdogs_counters_and_systemds_restarts():
    text = unit(snap("spark-duo"), SECOND, names.NODE_EXPORTER_UNIT).unit_text
    for flag in (f"--collector.textfile.directory={names.TEXTFILE_DIR}", "--collector.systemd",
                 "--collector.systemd.enable-restarts-metrics", "--web.listen-address=:9100"):
        assert f'"{flag}"' in text, (flag, text)
    assert "User=prometheus" in text


def test_a_new_rule_or_target_restarts_prometheus_through_its_units_text():
    s = snap("spark-duo")
    text = unit(s, HEAD, names.PROMETHEUS_UNIT).unit_text
    monitoring = s.serving.monitoring
    from components.steps.render import digest
    assert f"# Its configuration: {digest(monitoring.config_text, monitoring.rules_text)}" in text
    script = script_of(s.by_name(f"monitoring-{HEAD}-prometheus-config"), "create")
    assert monitoring.config_text in script and monitoring.rules_text in script and "promtool check config" in script


def test_a_package_is_removed_only_when_this_stack_installed_it():
    s = snap("spark-duo")
    r = s.by_name(f"monitoring-{SECOND}-{EXPORTER_PACKAGE}-package")
    delete = script_of(r, "delete")
    assert names.package_record(EXPORTER_PACKAGE) in delete and "purge" in delete
    create = script_of(r, "create")
    assert "systemctl mask prometheus-node-exporter.service" in create and "install ok installed" in create
    assert plain(r.inputs["create"]).startswith("exec env")
