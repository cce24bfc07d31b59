"""The recorded series, from each engine's real metric names to the one set of bws: names:
promtool evaluates the generated rules over each engine's exposition (tests/unit/monitoring/
exposition.py) with the labels the stack's scrape config gives its target, beside the same series
of a deployment the stack does not have, and every recorded value must be the expected one, or
absent where the engine exports nothing for it."""

from __future__ import annotations

import pytest

from components.engines import ENGINES
from components.monitoring.__main__ import main
from components.monitoring.rules import rules_text
from components.monitoring.series import DEPLOYMENT_SERIES, ENGINE_SOURCES, PROGRESS, REQUESTS_RUNNING, matchers
from tests.unit.monitoring.exposition import (EXPECTED, EXPOSITIONS, ITL_BUCKETS, REPO, TTFT_BUCKETS, Exposition,
                                              spec, target_labels, with_labels)
from tests.unit.monitoring.promtool import check_rules, run_rule_tests

SHIPPED = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (REPO / "stacks").glob("Pulumi.*.yaml"))
STEPS = 40      # 10 minutes of 15 s scrapes


def steady(e: Exposition, labels: dict[str, str], scale: float = 1) -> list[dict]:
    """Ten minutes of the engine's series at a steady pace (`scale` times the table's)."""
    series = [(s, f"0+{per_minute * scale / 4:g}x{STEPS}") for s, per_minute in e.counters().items()]
    series += [(s, f"{value * scale:g}x{STEPS}") for s, value in e.gauges().items()]
    for histogram, (low, high) in ((e.ttft, TTFT_BUCKETS), (e.itl, ITL_BUCKETS)):
        if histogram:
            name, own = histogram
            series += [(f'{name}_bucket{{{own},le="{le}"}}', f"0+{n * scale:g}x{STEPS}")
                       for le, n in ((low, 0), (high, 25), ("+Inf", 25))]
    return [{"series": with_labels(s, labels), "values": values} for s, values in series]


@pytest.mark.parametrize("e", EXPOSITIONS, ids=lambda e: e.engine)
def test_each_engine_gives_the_recorded_values(e: Exposition, tmp_path):
    assert {d.name: d.engine for d in spec(e.stack).deployments}[e.deployment] == e.engine
    inputs = (steady(e, target_labels(e.stack, e.deployment))
              + steady(e, target_labels(e.stack, e.deployment, rename="not-in-this-stack"), scale=3))
    me = matchers(stack=e.stack, deployment=e.deployment)
    checks = [{"expr": f"{r.name}{{{me}}}", "eval_time": "10m",
               "exp_samples": [{"labels": f"{r.name}{{{me}}}", "value": EXPECTED[r.name]}]
               if r in ENGINE_SOURCES[e.engine] else []}
              for r in DEPLOYMENT_SERIES]
    run_rule_tests(tmp_path, rules_text(e.stack, spec(e.stack)),
                   [{"interval": "15s", "input_series": inputs, "promql_expr_test": checks}])


def test_what_each_engine_lacks_is_said():
    """llama.cpp's server has no histogram, no KV-cache usage and no preemption: nothing is
    recorded for them; every engine gives what the alerts read."""
    lacking = {name: {r.name for r in DEPLOYMENT_SERIES if r not in ENGINE_SOURCES[name]} for name in ENGINES}
    assert lacking == {"vllm": set(), "sglang": set(),
                       "llamacpp": {"bws:ttft_seconds:p95", "bws:inter_token_latency_seconds:p95",
                                    "bws:kv_cache_usage_ratio", "bws:preemptions_per_second"}}
    assert all({PROGRESS, REQUESTS_RUNNING} <= set(ENGINE_SOURCES[name]) for name in ENGINES)


def test_node_series(tmp_path):
    node = 'job="node",instance="198.18.0.11:9100",stack="lab",node="lab-1"'
    gib = 2 ** 30
    inputs = [{"series": f"node_memory_{name}_bytes{{{node}}}", "values": f"{value}x10"}
              for name, value in (("MemTotal", 100 * gib), ("MemAvailable", 50 * gib),
                                  ("SwapTotal", 8 * gib), ("SwapFree", 6 * gib))]
    me = 'stack="lab",node="lab-1"'
    checks = [{"expr": f"{name}{{{me}}}", "eval_time": "5m", "exp_samples": [{"labels": f"{name}{{{me}}}", "value": value}]}
              for name, value in (("bws:node_mem_available_bytes", 50 * gib), ("bws:node_mem_available_ratio", 0.5),
                                  ("bws:node_swap_used_bytes", 2 * gib))]
    run_rule_tests(tmp_path, rules_text("lab", spec("lab")),
                   [{"interval": "1m", "input_series": inputs, "promql_expr_test": checks}])


@pytest.mark.parametrize("stack", SHIPPED)
def test_every_shipped_stack_s_rules_pass_promtool_check(stack, tmp_path, capsys):
    assert main(["--stack", stack, "--out", str(tmp_path), "--work-dir", str(REPO)]) == 0
    written = [tmp_path / f"{stack}.rules.yml", tmp_path / f"{stack}.dashboard.json"]
    assert capsys.readouterr().out.split() == [str(p) for p in written]
    check_rules(written[0])
