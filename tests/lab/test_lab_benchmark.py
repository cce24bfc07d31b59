"""The benchmark and the metrics on the converged lab, on the real engine: after `up` the stack
output `benchmark` carries the tiny deployment's figures (all > 0), a second preview does not run
the benchmark again, every target of the scrape config (the stack output `metrics` and the file
`.state/metrics/lab.json` the up wrote) answers /metrics on its node, and the status view reads
health, the benchmark and each node's memory, and the memory ledger holds each engine's KV figure to
the prediction; the stack's own Prometheus scrapes every target and gives each deployment's decode
tok/s. Needs `tests/lab/lab up`; runs the operator's `lab`
stack (.state/backend) and converges it first (a no-op when it already is)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

import pytest

from components.config.load import load_stack_file
from components.monitoring.promapi import Prometheus
from components.monitoring.series import DECODE_TOKENS, matchers
from tests.lab import topology as lab
from tests.lab.helpers import (api_key, changes, prometheus_answers, pulumi, require_lab, sh,
                               unhealthy_targets)
from tests.wait import wait_until

pytestmark = pytest.mark.lab
LAB_STATE = "converged"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

REPO = lab.REPO_ROOT
NODE1, NODE2 = lab.nodes(2)
# The stack names its nodes lab-N; the lab harness names their containers bws-lab-N.
NODES = {f"lab-{n.index}": n for n in (NODE1, NODE2)}
STACK = "lab"


@pytest.fixture(scope="module")
def outputs():
    require_lab(NODE1, NODE2)
    key = lab.STATE_DIR / "api-key"
    if not key.exists():
        key.write_text(os.urandom(18).hex() + "\n")
        key.chmod(0o600)
    select = subprocess.run(["pulumi", "stack", "select", "--create", STACK, "--non-interactive"],
                            cwd=REPO, capture_output=True, text=True, env=lab.pulumi_env())
    assert select.returncode == 0, select.stderr
    up = pulumi("up", "--yes", "--skip-preview")
    assert up.returncode == 0, up.stdout[-6000:] + up.stderr[-3000:]
    out = pulumi("stack", "output", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_benchmark_figures_are_stack_outputs(outputs):
    figures = outputs["benchmark"]["tiny"]
    assert set(figures) == {"decode_tok_s", "ttft_ms", "aggregate_tok_s", "concurrency"}
    assert figures["decode_tok_s"] > 0 and figures["ttft_ms"] > 0 and figures["aggregate_tok_s"] > 0
    assert figures["concurrency"] == 4
    print(f"lab benchmark: {figures}")


def test_a_second_preview_does_not_benchmark_again(outputs):
    preview = pulumi("preview", "--json")
    assert preview.returncode == 0, preview.stderr[-3000:]
    assert not [c for c in changes(json.loads(preview.stdout)) if c[1] == "tiny-benchmark"]


def test_every_scrape_target_answers_metrics_on_its_node(outputs):
    groups = outputs["metrics"]
    written = json.loads((REPO / ".state" / "metrics" / f"{STACK}.json").read_text())
    assert written == groups
    # each deployment's head, where /metrics is served, and its engine (the metrics' prefix)
    heads = {"tiny": ("lab-1", "vllm"), "tiny-b": ("lab-2", "vllm"), "tiny-gguf": ("lab-1", "llamacpp")}
    assert [g["labels"]["deployment"] for g in groups] == list(heads)
    for g in groups:
        labels = g["labels"]
        node_name, engine = heads[labels["deployment"]]
        assert (labels["engine"], labels["node"], labels["stack"]) == (engine, node_name, STACK)
        node = NODES[labels["node"]]
        # llama-server asks for the API key on /metrics too (vLLM serves it without)
        auth = f"-H 'Authorization: Bearer {api_key()}'" if engine == "llamacpp" else ""
        for target in g["targets"]:
            host, port = target.rsplit(":", 1)
            assert host == node.mgmt_ip      # the engine listens on every address: the node's management one
            text = sh(node, f"curl -fsS -m 10 {auth} http://127.0.0.1:{int(port)}/metrics")
            assert "# TYPE" in text and f"{engine}:" in text, text[:500]


def test_the_status_view_reads_health_benchmark_and_memory(outputs):
    done = subprocess.run([sys.executable, "-m", "components.todo", "--status", "--stack", STACK], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env=lab.pulumi_env())
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "tiny (vllm on lab-1, lab-2, port 8000): healthy" in out, out
    assert "tok/s decode" in out and "no benchmark yet" not in out, out
    for name in NODES:
        assert f"  {name}: " in out and "MemAvailable" in out, out


@pytest.mark.parametrize("deployment", ["tiny", "tiny-b", "tiny-gguf"])
def test_the_memory_ledger_holds_each_engine_s_own_kv_figure_to_the_prediction(outputs, deployment):
    """The ledger (docs/memory-ledger.md): the KV tokens the fit predicts are within 10 % of what
    the engine itself reports after its health gate (vLLM's CPU build: its KV cache size line;
    llama.cpp: its KV cells), and its container holds memory. A wider gap is a formula to fix."""
    entry = outputs["memory_ledger"][deployment]
    print(f"lab ledger {deployment}: {json.dumps(entry, sort_keys=True)}")
    assert entry["predicted"] and entry["measured"]["kv_tokens"], entry
    assert entry["measured"]["memory_bytes"] and entry["measured"]["memory_bytes"] > 0, entry
    assert abs(entry["kv_tokens_error_pct"]) <= 10, entry


def test_the_stacks_own_prometheus_scrapes_every_target(outputs):
    """The lab stack's `monitoring:` (Prometheus on lab-1): itself, the three engines, the gateway
    and both nodes' exporters, all up. llama-server and the gateway answer /metrics only with their
    keys, so this fails if Prometheus scrapes them without (a 401 reads as down)."""
    prom = Prometheus(outputs["prometheus"])
    spec = load_stack_file(REPO / "stacks" / f"Pulumi.{STACK}.yaml")

    # Itself, every engine, the gateway, every node's exporter.
    unhealthy = lambda: unhealthy_targets(prom, 1 + len(spec.deployments) + 1 + len(spec.nodes))  # noqa: E731
    wait_until(lambda: not unhealthy(), 120, "every target of the stack's Prometheus up", seen=unhealthy)
    deployments = {t.labels.get("deployment") for t in prom.targets()} - {None}
    assert deployments == {d.name for d in spec.deployments}, deployments


def test_the_stacks_own_prometheus_gives_decode_tok_s_for_every_deployment(outputs):
    """After completions to each deployment (the benchmark ran at `up`, maybe minutes ago, beyond a
    rate's window), its decode tok/s read from the stack's Prometheus is above 0: the three engines'
    own counters (two vLLM, one llama.cpp) map to the one recorded series."""
    prom = Prometheus(outputs["prometheus"])
    spec = load_stack_file(REPO / "stacks" / f"Pulumi.{STACK}.yaml")

    def decode(d) -> list[float]:
        return [s.value for s in prometheus_answers(
            prom, f"{DECODE_TOKENS.name}{{{matchers(stack=STACK, deployment=d.name)}}}")]

    def every_deployment_decodes() -> bool:
        for d in spec.deployments:
            ask(d)
        return all(any(v > 0 for v in decode(d)) for d in spec.deployments)
    wait_until(every_deployment_decodes, 240, "decode tok/s above 0 for every deployment",
               seen=lambda: {d.name: decode(d) for d in spec.deployments}, every_s=10)
    print(f"lab decode tok/s from Prometheus: {({d.name: decode(d) for d in spec.deployments})}")


def ask(d) -> None:
    """A real completion from the deployment, at its head's management address (from this host)."""
    body = json.dumps({"model": d.served_name, "max_tokens": 16, "temperature": 0,
                       "messages": [{"role": "user", "content": "Count to ten."}]}).encode()
    request = urllib.request.Request(f"http://{NODES[d.nodes[0]].mgmt_ip}:{d.port}/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {api_key()}"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        assert "choices" in json.loads(reply.read())
