"""python -m components.todo --status (components/todo/status.py) with the transport faked: one
read-only probe per node, its lines parsed into health, GPU memory and MemAvailable, the last
benchmark from the stack outputs; an offline stack opens no connection and says so."""

from __future__ import annotations

import subprocess

import pytest

from components.steps.ssh import RemoteError
from components.todo import status as status_mod
from components.todo.status import benchmark_lines, gather, parse, probe_script, render_status, status
from tests.unit.test_graph import snap

BENCH = {"tiny": {"decode_tok_s": 27.31, "ttft_ms": 142.0, "aggregate_tok_s": 80.5, "concurrency": 4}}


class FakeProbe:
    def __init__(self, answers: dict):
        self.answers, self.calls = answers, []

    def __call__(self, node, conn, script):
        self.calls.append((node, conn.host, script))
        answer = self.answers[node]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_one_probe_per_node_health_benchmark_and_memory():
    spec = snap("lab").spec
    probe = FakeProbe({
        "lab-1": "health\ttiny\t200\tyes\nmem\t3145728\t8388608\n",
        "lab-2": "mem\t1048576\t8388608\n",
    })
    text = status("lab", spec, {"benchmark": BENCH}, probe=probe)
    assert sorted(n for n, _, _ in probe.calls) == ["lab-1", "lab-2"]
    assert {n: h for n, h, _ in probe.calls} == {n.name: n.host for n in spec.nodes}
    assert "tiny (vllm on lab-1, lab-2, port 8000): healthy (/health 200, /v1/models lists tiny-llama)" in text
    assert "last benchmark: 27.3 tok/s decode, first token in 142 ms, 80.5 tok/s aggregate at concurrency 4" in text
    assert "lab-1: MemAvailable 3.0 of 8.0 GiB" in text
    assert "lab-2: MemAvailable 1.0 of 8.0 GiB" in text


def test_unhealthy_unreachable_and_gpus():
    spec = snap("lab").spec
    probe = FakeProbe({
        "lab-1": "health\ttiny\t000\tno\ngpu\t0\t81920\t97887\ngpu\t1\t[N/A]\t[N/A]\nmem\t1048576\t2097152\n",
        "lab-2": RemoteError("status: cannot reach root@198.18.0.12:22 by SSH"),
    })
    text = status("lab", spec, {}, probe=probe)
    assert "UNHEALTHY (/health no answer, /v1/models does not list tiny-llama)" in text
    assert "last benchmark: no benchmark yet" in text
    assert "GPU 0 80.0/95.6 GiB used; GPU 1 memory n/a (unified); MemAvailable 1.0 of 2.0 GiB" in text
    assert "lab-2: unreachable: status: cannot reach" in text


def test_head_unreachable_makes_health_unknown():
    spec = snap("lab").spec
    found = gather(spec, {n.name: status_mod.connection_for(n) for n in spec.nodes},
                   FakeProbe({"lab-1": RemoteError("no answer within 60 s"), "lab-2": "mem\t1\t2\n"}))
    text = render_status("lab", spec, {}, found)
    assert "tiny (vllm on lab-1, lab-2, port 8000): unknown: lab-1 did not answer (no answer within 60 s)" in text


@pytest.mark.parametrize("how", ["config", "env"])
def test_offline_opens_no_connection_and_says_so(how, monkeypatch):
    spec = snap("spark-duo").spec
    if how == "config":
        spec = spec.model_copy(update={"offline": True})
    else:
        monkeypatch.setenv("BLACKWELL_SERVING_OFFLINE", "1")

    def refuse(*args, **kwargs):
        raise AssertionError("an offline status opened a connection")
    monkeypatch.setattr(status_mod, "run_script", refuse)
    monkeypatch.setattr(subprocess, "run", refuse)
    text = status("spark-duo", spec, {"benchmark": {}}, probe=refuse)
    assert "offline: no node was contacted" in text
    assert "qwen35 (vllm on spark-1a32, spark-5be3" in text and "unknown (offline)" in text
    assert "Nodes" not in text


def test_probe_script_asks_loopback_with_the_key_from_its_file():
    spec = snap("lab").spec
    script = probe_script(spec, "lab-1")
    assert "http://127.0.0.1:8000/health" in script and "http://127.0.0.1:8000/v1/models" in script
    assert "/etc/blackwell-serving/tiny.env" in script and "VLLM_API_KEY" in script
    assert "-H @\"$headers\"" in script
    assert "gpu_query index,memory.used,memory.total" in script and "meminfo_kb MemAvailable" in script
    # Read-only: nothing that changes the node.
    for word in ("systemctl start", "systemctl stop", "docker run", "rm -rf", "> /etc"):
        assert word not in script
    # lab-2 runs the lab's second model (tiny-b) alone: its probe asks that one, not tiny.
    other = probe_script(spec, "lab-2")
    assert "http://127.0.0.1:8002/health" in other and "/etc/blackwell-serving/tiny-b.env" in other
    assert "8000" not in other and "tiny.env" not in other


def test_probe_script_runs_and_parses_locally(tmp_path):
    """The real script, run by bash here with a fake curl (no network) and no nvidia-smi."""
    spec = snap("lab").spec
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "curl").write_text('#!/bin/sh\ncase "$*" in *"%{http_code}"*) printf 200 ;; '
                                  '*) printf \'{"data":[{"id":"tiny-llama"},{"id":"tiny-llama-gguf"}]}\' ;; esac\n')
    (bin_dir / "curl").chmod(0o755)
    script = probe_script(spec, "lab-1")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    st = parse(done.stdout)
    assert st.health == {"tiny": ("200", True), "tiny-gguf": ("200", True)}   # lab-1's two engines
    assert st.mem_kb is not None and st.mem_kb[1] > 0


def test_benchmark_lines_for_the_summary():
    assert benchmark_lines({"benchmark": BENCH}) == [
        "  benchmark tiny: 27.3 tok/s decode, first token in 142 ms, 80.5 tok/s aggregate at concurrency 4"]
    assert benchmark_lines({}) == []


def test_cli_status_uses_the_outputs_and_no_preview(monkeypatch, capsys):
    from components.todo import __main__ as cli
    from components.todo import engine

    monkeypatch.setattr(engine, "engine_env_ok", lambda: None)
    monkeypatch.setattr(engine, "preview", lambda *a, **k: pytest.fail("--status ran a preview"))
    monkeypatch.setattr(cli, "stack_outputs", lambda stack, work_dir: ({"benchmark": BENCH}, lambda key: None))
    monkeypatch.setenv("BLACKWELL_SERVING_OFFLINE", "1")
    assert cli.main(["--stack", "lab", "--status"]) == 0
    out = capsys.readouterr().out
    assert "Status of stack lab" in out and "27.3 tok/s decode" in out and "offline" in out


def test_the_memory_ledger_sets_the_prediction_beside_the_engine_s_own_figure():
    spec = snap("lab").spec
    ledger = {"tiny": {"predicted": {"kv_tokens": 48_048}, "measured": {"kv_tokens": 43_680, "memory_bytes": 3 * 2**29},
                       "kv_tokens_error_pct": 10.0},
              "tiny-b": {"predicted": {"kv_tokens": 1000}, "measured": {"kv_tokens": None, "memory_bytes": None}}}
    text = status("lab", spec, {"memory_ledger": ledger}, probe=FakeProbe({"lab-1": "", "lab-2": ""}))
    assert ("memory: KV cache predicted 48,048 tokens, the engine's own 43,680 (+10.0 %); it held 1.50 GiB"
            in text)
    assert "memory: KV cache predicted 1,000 tokens, the engine's own not read yet" in text
    assert "memory: no prediction (the model's config was not read)" in text   # tiny-gguf: no entry
