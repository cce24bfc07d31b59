"""The benchmark after the health gate (deployments[].benchmark): its schema, its place in the
graph (on the head, after the health gate, phase verify, normal priority, off by config), what its
script runs (the key never in argv), and the program's measuring and arithmetic against a real
HTTP server on 127.0.0.1 that streams server-sent events as vLLM and SGLang do."""

from __future__ import annotations

import importlib.util
import json
import shlex
import pytest
from pydantic import ValidationError

from components.resources.benchmark import parse_figures, program_args
from components.config.schema import BenchmarkSpec, DeploymentSpec
from components.steps.render import TEMPLATES
from tests.paced_engine import GAP_S, TTFT_S, FakeEngine, paced_engine
from tests.unit.mocked import SENTINEL, script_of, snapshot, stdin_data
from tests.unit.test_graph import closure, dep_names, snap

SPEC = importlib.util.spec_from_file_location("benchmark_engine", TEMPLATES / "scripts" / "benchmark_engine.py")
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)


# ---------------------------------------------------------------------------------------------
# Schema


def test_defaults_on_and_bounds():
    b = BenchmarkSpec()
    assert (b.enabled, b.prompts, b.prompt_set, b.max_tokens, b.concurrency, b.min_decode_tok_s) == \
        (True, 4, [], 128, 4, None)
    for bad in ({"concurrency": 0}, {"prompts": 0}, {"prompts": 65}, {"max_tokens": 1}, {"min_decode_tok_s": 0},
                {"prompt_set": [""]}, {"prompt_set": ["a\nb"]}, {"prompt_set": ["x"] * 65}, {"concurency": 2}):
        with pytest.raises(ValidationError):
            BenchmarkSpec(**bad)


def test_max_tokens_must_leave_room_for_a_prompt():
    d = snap("lab").spec.deployments[0]   # max_model_len 256
    data = d.model_dump(mode="json")
    data["benchmark"] = {"max_tokens": 256}
    with pytest.raises(ValidationError, match="benchmark.max_tokens"):
        DeploymentSpec(**data)
    data["benchmark"] = {"max_tokens": 256, "enabled": False}
    DeploymentSpec(**data)


# ---------------------------------------------------------------------------------------------
# Graph and script


def test_after_the_health_gate_on_the_head_verify_normal():
    s = snap("lab")
    assert "tiny-health" in dep_names(s.by_name("tiny-benchmark"))
    assert "tiny-lab-1-install" in closure(s, "tiny-benchmark")
    deployment = s.serving.deployments["tiny"]
    [info] = [i for r, i in s.serving.nodes["lab-1"].steps if r is deployment.benchmark]
    assert (info.phase, info.priority, info.node) == ("verify", "normal", "lab-1")
    assert info.sentence("create").startswith("Benchmark tiny: decode tok/s")
    assert deployment.figures is not None


def test_off_by_config_no_step_and_no_output():
    s = snap("lab")
    d = s.spec.deployments[0].model_copy(update={"benchmark": BenchmarkSpec(enabled=False)})
    off = snapshot("lab", s.spec.model_copy(update={"deployments": [d]}))
    assert not [r for r in off.commands() if r.name.endswith("-benchmark")]


def test_script_runs_the_program_on_loopback_with_the_key_file_never_the_key():
    s = snap("lab")
    step = s.by_name("tiny-benchmark")
    script = script_of(step)
    assert stdin_data(step) == (TEMPLATES / "scripts" / "benchmark_engine.py").read_text()
    assert SENTINEL not in script and SENTINEL not in str(step.inputs.get("create"))
    line = next(ln for ln in script.splitlines() if ln.strip().startswith('python3 "$script"'))
    argv = shlex.split(line)[2:]
    # The lab stack's own prompts and tokens (stacks/Pulumi.lab.yaml), the default concurrency and timeout.
    assert argv == ["http://127.0.0.1:8000", "tiny-llama", "2", "[]", "32", "4", "900", "-",
                    "/etc/blackwell-serving/tiny.env", "VLLM_API_KEY"]
    # The engine units' digest is in the script: a new engine re-runs it, a plain second up does not.
    health = script_of(s.by_name("tiny-health"))
    digest_line = next(ln for ln in health.splitlines() if "Engine units checked:" in ln)
    assert digest_line.split(":")[1].split()[0] in script


def test_a_venv_engine_uses_the_venv_python():
    s = snap("rtxpro-quad")
    script = script_of(s.by_name("qwen35-397b-benchmark"))
    assert "/current/bin/python3 \"$script\"" in script and "docker run" not in script


def test_program_args_carry_the_floor_and_the_prompt_set():
    d = snap("lab").spec.deployments[0].model_copy(update={"benchmark": BenchmarkSpec(
        prompts=3, prompt_set=["one", "two"], min_decode_tok_s=12.5, concurrency=8)})
    assert program_args(d, "http://127.0.0.1:8000") == [
        "http://127.0.0.1:8000", "tiny-llama", "3", '["one", "two"]', "128", "8", "900", "12.5"]


def test_parse_figures():
    assert parse_figures({"decode-tok-s": "27.5", "ttft-ms": "140.0", "aggregate-tok-s": "80.25",
                          "concurrency": "4"}) == \
        {"decode_tok_s": 27.5, "ttft_ms": 140.0, "aggregate_tok_s": 80.25, "concurrency": 4}
    assert parse_figures({"decode-tok-s": "", "ttft-ms": "", "aggregate-tok-s": "", "concurrency": ""}) == {}


# ---------------------------------------------------------------------------------------------
# The program against a real local server (127.0.0.1 only)


@pytest.fixture
def server():
    with paced_engine() as url:
        yield url


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "engine.env"
    path.write_text("OTHER=x\nVLLM_API_KEY=test-key\n")
    return str(path)


def run_program(capsys, argv):
    rc = bench.main(argv)
    out, err = capsys.readouterr()
    values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return rc, values, err


def test_measures_decode_ttft_and_aggregate(server, key_file, capsys):
    rc, v, err = run_program(capsys, [server, "m", "2", "[]", "21", "3", "60", "-", key_file, "VLLM_API_KEY"])
    assert rc == 0, err
    # The server paces its tokens, and a sleep never ends early: the figures can be slower than the
    # pace on a loaded machine, never faster (how close they come is bench/benchmark_program_bench.py's).
    assert 0 < float(v["decode-tok-s"]) <= 1 / GAP_S + 1
    assert float(v["ttft-ms"]) >= TTFT_S * 1000
    assert float(v["aggregate-tok-s"]) > 0
    assert v["concurrency"] == "3" and v["prompts"] == "2" and v["max-tokens"] == "21"
    # warm-up + 2 single + max(2, 3) concurrent
    assert len(FakeEngine.requests) == 1 + 2 + 3
    first = FakeEngine.requests[1]
    assert first["stream"] is True and first["ignore_eos"] is True and first["temperature"] == 0
    assert first["messages"][0]["content"] == bench.PROMPTS[0]
    assert FakeEngine.requests[2]["messages"][0]["content"] == bench.PROMPTS[1]


def test_counts_chunks_when_the_engine_reports_no_usage(server, key_file, capsys):
    FakeEngine.usage = False
    rc, v, err = run_program(capsys, [server, "m", "1", '["only this"]', "11", "1", "60", "-", key_file,
                                      "VLLM_API_KEY"])
    assert rc == 0, err
    assert 0 < float(v["decode-tok-s"]) <= 1 / GAP_S + 1
    assert {r["messages"][0]["content"] for r in FakeEngine.requests[1:]} == {"only this"}


def test_a_floor_above_the_figures_fails_with_them(server, key_file, capsys):
    rc, v, err = run_program(capsys, [server, "m", "1", "[]", "6", "1", "60", "5000", key_file, "VLLM_API_KEY"])
    assert rc == 3
    assert "below the floor of 5000 tok/s (benchmark.min_decode_tok_s)" in err
    assert "tok/s single-stream" in err and "first token in" in err and "at concurrency 1" in err
    assert "decode-tok-s" in v   # the figures are printed all the same


def test_a_wrong_key_is_reported_not_a_traceback(server, tmp_path, capsys):
    wrong = tmp_path / "wrong.env"
    wrong.write_text("VLLM_API_KEY=nope\n")
    rc, v, err = run_program(capsys, [server, "m", "1", "[]", "4", "1", "60", "-", str(wrong), "VLLM_API_KEY"])
    assert rc == 1 and "answered 401" in err and not v


def test_nothing_listening_is_reported(capsys):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc, _, err = run_program(capsys, [f"http://127.0.0.1:{port}", "m", "1", "[]", "4", "1", "5", "-"])
    assert rc == 1 and "the benchmark failed" in err


def test_arithmetic():
    r1, r2 = bench.Result(0.0), bench.Result(10.0)
    r1.first, r1.last, r1.tokens = 0.1, 1.1, 11        # 10 tokens in 1 s
    r2.first, r2.last, r2.tokens = 10.3, 13.3, 31      # 30 tokens in 3 s
    r1.chunks, r1.arrivals, r2.chunks, r2.arrivals = 11, 11, 31, 31
    decode, ttft_ms, paced = bench.single_stream([r1, r2])
    assert paced and decode == pytest.approx(40 / 4)
    assert ttft_ms == pytest.approx(200)               # the median of 100 and 300 ms
    assert bench.aggregate([r1, r2], 2.0) == pytest.approx(21)
    assert bench.prompt_set(3, '["a", "b"]') == ["a", "b", "a"]
    assert bench.prompt_set(9, "[]") == bench.PROMPTS + bench.PROMPTS[:1]


def test_a_stream_read_in_one_burst_gives_no_absurd_decode_rate():
    """Its 31 chunks read at once (first == last): the whole request's time counts, not a near-zero
    span (a loaded machine once reported 176421 tok/s that way)."""
    r1, r2 = bench.Result(0.0), bench.Result(10.0)
    r1.first, r1.last, r1.tokens, r1.chunks, r1.arrivals = 0.1, 1.1, 11, 11, 11
    r2.first, r2.last, r2.tokens, r2.chunks, r2.arrivals = 12.0, 12.00001, 31, 31, 1
    decode, _, paced = bench.single_stream([r1, r2])
    assert not paced
    assert decode == pytest.approx((11 + 31) / (1.1 + 2.00001))
