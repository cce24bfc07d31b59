"""Each alert under `promtool test rules`: the minute it fires, the minute before (still pending),
and the series where it must stay quiet. Rules are evaluated every minute; promtool reports an
alert only once it fires (its `for:` held)."""

from __future__ import annotations

import pytest

from components import names
from components.monitoring.alerts import deployment_alerts, restart_loop_minutes
from components.monitoring.rules import rules_text
from tests.unit.monitoring.exposition import EXPOSITIONS, Exposition, spec, target_labels, with_labels
from tests.unit.monitoring.promtool import rule, run_rule_tests


def fired(rules: str, group: str, name: str, labels: dict[str, str]) -> list[dict]:
    """The one alert `name` of `group`, with the series' labels and the rule's text."""
    r = rule(rules, group, name)
    return [{"exp_labels": {**labels, **r["labels"]}, "exp_annotations": r["annotations"]}]


def checks(name: str, at: dict[str, list[dict]]) -> list[dict]:
    return [{"eval_time": t, "alertname": name, "exp_alerts": alerts} for t, alerts in at.items()]


def stops_at_minute_10(per_minute: float, steps: int = 120) -> str:
    """A counter scraped every 15 s that grows until minute 10, then stays."""
    return f"0+{per_minute / 4:g}x40 {per_minute * 10:g}x{steps - 40}"


@pytest.mark.parametrize("e", EXPOSITIONS, ids=lambda e: e.engine)
def test_wedged_fires_when_progress_stops_while_requests_run(e: Exposition, tmp_path):
    """Progress stops at minute 10: the 2-minute rate is 0 from minute 12 (its window holds no
    growth any more), pending from then, firing from minute 17 (5 minutes held). Not when the
    tokens keep coming, nor when no request runs (the last ones ended as progress stopped)."""
    labels = target_labels(e.stack, e.deployment)

    def series(counters: dict[str, str], running: str | None = None) -> list[dict]:
        return ([{"series": with_labels(s, labels), "values": values} for s, values in counters.items()]
                + [{"series": with_labels(s, labels), "values": running or f"{v:g}x120"} for s, v in e.running.items()])

    stuck = {s: stops_at_minute_10(per_minute) for s, per_minute in e.progress.items()}
    flowing = {s: f"0+{per_minute / 4:g}x120" for s, per_minute in e.progress.items()}
    rules = rules_text(e.stack, spec(e.stack))
    group = f"blackwell-serving/{e.stack}/{e.deployment}"
    wedged = fired(rules, group, "BwsEngineWedged", {"stack": e.stack, "deployment": e.deployment})
    run_rule_tests(tmp_path, rules, [
        {"interval": "15s", "input_series": series(stuck),
         "alert_rule_test": checks("BwsEngineWedged", {"16m": [], "17m": wedged, "29m": wedged})},
        {"interval": "15s", "input_series": series(flowing),
         "alert_rule_test": checks("BwsEngineWedged", {"17m": [], "29m": []})},
        {"interval": "15s", "input_series": series(stuck, running="5x40 0x80"),
         "alert_rule_test": checks("BwsEngineWedged", {"17m": [], "29m": []})},
    ])


def test_engine_down_after_five_minutes_without_a_scrape(tmp_path):
    """tiny's target answers until minute 5, then not: pending from minute 6, firing from 11.
    tiny-b answers all along; a gap of 3 minutes is no outage."""
    rules = rules_text("lab", spec("lab"))
    tiny, tiny_b = target_labels("lab", "tiny"), target_labels("lab", "tiny-b")
    down = fired(rules, "blackwell-serving/lab/tiny", "BwsEngineDown", tiny)
    run_rule_tests(tmp_path, rules, [
        {"interval": "1m", "input_series": [{"series": with_labels("up", tiny), "values": "1x5 0x20"},
                                            {"series": with_labels("up", tiny_b), "values": "1x25"}],
         "alert_rule_test": checks("BwsEngineDown", {"10m": [], "11m": down, "25m": down})},
        {"interval": "1m", "input_series": [{"series": with_labels("up", tiny), "values": "1x5 0x3 1x20"}],
         "alert_rule_test": checks("BwsEngineDown", {"11m": [], "20m": []})},
    ])


def test_restart_loop_after_three_watchdog_restarts_in_the_window(tmp_path):
    """tiny's window: 3 × (its 900 s grace + 2 failures × (10 s interval + 10 s timeout)) = 47
    minutes. Restarts at minutes 5, 10, 15 fire at 15 (not at 14, after two); restarts 50 minutes
    apart never do."""
    assert restart_loop_minutes({d.name: d for d in spec("lab").deployments}["tiny"]) == 47
    rules = rules_text("lab", spec("lab"))
    counter = {"job": "node", "instance": "198.18.0.11:9100", "stack": "lab", "node": "lab-1", "deployment": "tiny"}
    series = with_labels(names.WATCHDOG_RESTARTS_METRIC, counter)
    loop = fired(rules, "blackwell-serving/lab/tiny", "BwsRestartLoop", counter)
    run_rule_tests(tmp_path, rules, [
        {"interval": "1m", "input_series": [{"series": series, "values": "0x4 1x4 2x4 3x30"}],
         "alert_rule_test": checks("BwsRestartLoop", {"14m": [], "15m": loop, "40m": loop})},
        {"interval": "1m", "input_series": [{"series": series, "values": "0x4 1x49 2x49 3x20"}],
         "alert_rule_test": checks("BwsRestartLoop", {"15m": [], "55m": [], "105m": [], "124m": []})},
    ])


def node_memory(stack: str, node: str, available: str) -> list[dict]:
    """node_exporter's MemTotal (100 GiB) and MemAvailable (`available`) on `node`."""
    labels = {"job": "node", "instance": f"{node}:9100", "stack": stack, "node": node}
    return [{"series": with_labels("node_memory_MemTotal_bytes", labels), "values": f"{100 * 2 ** 30}x30"},
            {"series": with_labels("node_memory_MemAvailable_bytes", labels), "values": available}]


def gib(values: str) -> str:
    """`50x9 5x20` in GiB, as bytes."""
    return " ".join(f"{int(v) * 2 ** 30}x{n}" for v, n in (w.split("x") for w in values.split()))


def test_memory_pressure_on_a_unified_memory_node(tmp_path):
    """lab-1 (cpu: unified) drops to 5% available at minute 10: pending, then firing from 15.
    lab-2 dips for 3 minutes only."""
    rules = rules_text("lab", spec("lab"))
    pressure = fired(rules, "blackwell-serving/lab/node/lab-1", "BwsNodeMemoryPressure",
                     {"stack": "lab", "node": "lab-1"})
    run_rule_tests(tmp_path, rules, [
        {"interval": "1m", "input_series": node_memory("lab", "lab-1", gib("50x9 5x20"))
                                           + node_memory("lab", "lab-2", gib("50x9 5x2 50x17")),
         "alert_rule_test": checks("BwsNodeMemoryPressure", {"14m": [], "15m": pressure, "29m": pressure})},
    ])


def test_gb10_nodes_have_the_memory_alert_and_rtx_pro_nodes_do_not(tmp_path):
    """A GB10's GPU shares its memory; an RTX PRO 6000 has its own: a host short of memory there
    raises nothing."""
    for node in spec("spark-duo").nodes:
        assert rule(rules_text("spark-duo", spec("spark-duo")), f"blackwell-serving/spark-duo/node/{node.name}",
                    "BwsNodeMemoryPressure")
    [node] = spec("rtxpro-quad").nodes
    run_rule_tests(tmp_path, rules_text("rtxpro-quad", spec("rtxpro-quad")), [
        {"interval": "1m", "input_series": node_memory("rtxpro-quad", node.name, gib("5x30")),
         "alert_rule_test": checks("BwsNodeMemoryPressure", {"15m": [], "29m": []})},
    ])


def test_no_restart_loop_alert_without_a_watchdog():
    tiny = {d.name: d for d in spec("lab").deployments}["tiny"]
    unwatched = tiny.model_copy(update={"watchdog": tiny.watchdog.model_copy(update={"enabled": False})})
    assert [a["alert"] for a in deployment_alerts(tiny, {"stack": "lab", "deployment": "tiny"})] == [
        "BwsEngineDown", "BwsEngineWedged", "BwsRestartLoop"]
    assert [a["alert"] for a in deployment_alerts(unwatched, {"stack": "lab", "deployment": "tiny"})] == [
        "BwsEngineDown", "BwsEngineWedged"]
