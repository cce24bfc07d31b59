"""The third engine on the converged lab (the operator's `lab` stack, converged first: a no-op when
it already is): llama.cpp's C++ llama-server (the lab image 198.18.0.1:5000/lab/llama-cpp, built by
tests/lab/engine/prepare.sh) serving the tiny model as one GGUF file, deployment tiny-gguf on lab-1.
Through the gateway, behind its health gate, with the watchdog restarting it when it is wedged, a
benchmark figure, and its flag check (llama-server --help in the image) stopping an `up` with an
unknown flag before anything is stopped. Costs one restart of llama-server (seconds)."""

from __future__ import annotations

import json
import urllib.request

import pytest
import yaml

from components import names
from components.engines.llamacpp import gguf_reader
from tests.engine.conftest import copy_project
from tests.lab import topology as lab
from tests.lab.helpers import (LAB_CONFIG, completion, converge_lab_stack, deployment, journal_since, node_now, pulumi,
                               require_lab, sh, unit_prop, watchdog_state)
from tests.wait import wait_until

pytestmark = pytest.mark.lab
LAB_STATE = "converged"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE1, NODE2 = lab.nodes(2)
GGUF = deployment("tiny-gguf")
UNIT, CONTAINER = names.engine_unit(GGUF.name), names.engine_container(GGUF.name)
SERVED, PORT = "tiny-llama-gguf", 8003
ANSWER = " Hello from the tiny lab model!"   # the tiny model's answer to "Say hello." (vLLM's too)
WEDGED_S = 2 * (10 + 10) + 30 + 60           # 2 checks 10 s apart with 10 s each; docker stop's 30 s; the start


@pytest.fixture(scope="module")
def converged():
    require_lab(NODE1, NODE2)
    converge_lab_stack()
    out = pulumi("stack", "output", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def answers() -> bool:
    try:
        return bool(completion(SERVED, PORT)["choices"])
    except Exception:
        return False


def test_the_generated_gguf_file_reads_as_the_tiny_llama():
    facts = gguf_reader().gguf_facts(str(lab.STATE_DIR / "tiny-gguf" / "tiny-llama-f32.gguf"))
    assert (facts["architecture"], facts["context_length"], facts["block_count"], facts["head_count_kv"]) == \
        ("llama", 2048, 2, 1)


def test_llama_server_answers_in_words_through_the_gateway(converged):
    key = (lab.STATE_DIR / "gateway-key").read_text().strip()
    body = {"model": SERVED, "max_tokens": 8, "temperature": 0, "messages": [{"role": "user", "content": "Say hello."}]}
    request = urllib.request.Request(f"http://{NODE1.mgmt_ip}:4000/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        answer = json.load(reply)
    assert answer["choices"][0]["message"]["content"] == ANSWER, answer
    # the engine behind it is llama.cpp's server: its own /props names the GGUF file it loaded
    props = json.loads(sh(NODE1, f"curl -fsS -m 10 -H 'Authorization: Bearer "
                                 f"{(lab.STATE_DIR / 'api-key').read_text().strip()}' http://127.0.0.1:{PORT}/props"))
    assert props["model_path"].endswith("/tiny-llama-f32.gguf"), props.get("model_path")


def test_the_health_gate_passed_on_a_real_completion(converged):
    state = json.loads(pulumi("stack", "export").stdout)
    gate = next(r for r in state["deployment"]["resources"] if r["urn"].endswith("::tiny-gguf-health"))
    assert ANSWER.strip() in json.dumps(gate.get("outputs", {})), gate.get("outputs")
    assert sh(NODE1, f"curl -fsS -m 10 http://127.0.0.1:{PORT}/health") == '{"status":"ok"}'  # no key needed


def test_one_benchmark_figure(converged):
    figures = converged["benchmark"]["tiny-gguf"]
    assert figures["decode_tok_s"] > 0 and figures["ttft_ms"] > 0 and figures["aggregate_tok_s"] > 0
    print(f"llama.cpp benchmark (tiny-gguf on lab-1): {figures}")


def test_a_wedged_llama_server_is_restarted_by_the_watchdog(converged):
    run_before = unit_prop(NODE1, UNIT, "InvocationID")
    wait_until(lambda: sh(NODE1, f"cat {watchdog_state(GGUF.name, 'answered')} || true") == run_before,
               60, "the watchdog's first answer from this start of llama-server")
    since = node_now(NODE1)
    sh(NODE1, f"for p in $(docker top {CONTAINER} -eo pid | tail -n +2); do kill -STOP \"$p\"; done")
    took = wait_until(lambda: unit_prop(NODE1, UNIT, "InvocationID") != run_before and answers(), WEDGED_S,
                      "llama-server serving again after SIGSTOP")
    print(f"llama-server serving again {took:.0f} s after SIGSTOP")
    journal = journal_since(NODE1, names.watchdog_units(GGUF.name)[0], since)
    assert "no completion (2 of 2 in a row)" in journal and "restarting" in journal, journal[-2000:]


def test_an_unknown_flag_stops_the_up_at_the_engine_probe_before_anything_stops(converged, tmp_path):
    """The lab stack (this repository's backend and state) from a copy of the program whose stack
    file gives llama-server a flag it does not have: the probe (llama-server --help in the image)
    fails the up, llama-server keeps running untouched; the repository's own stack file converges
    it back."""
    project = copy_project(tmp_path)
    config = yaml.safe_load(LAB_CONFIG.read_text())
    gguf = next(d for d in config["config"]["blackwell-serving:deployments"] if d["name"] == GGUF.name)
    gguf["extra_args"] = [*gguf["extra_args"], "--no-such-llama-flag", "1"]
    # the whole file, its encryptionsalt included (copy_project drops it): the operator's stack
    (project / "stacks" / "Pulumi.lab.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    run_before = unit_prop(NODE1, UNIT, "InvocationID")
    up = pulumi("up", "--yes", "--skip-preview", cwd=project, timeout=900)
    try:
        text = up.stdout + up.stderr
        assert up.returncode != 0, text[-3000:]
        assert "--no-such-llama-flag: unknown to llamacpp" in text, text[-3000:]
        print(next(line.strip() for line in text.splitlines() if "--no-such-llama-flag: unknown" in line))
        assert "nothing was stopped" in text, text[-3000:]
        assert unit_prop(NODE1, UNIT, "InvocationID") == run_before   # never stopped
        assert answers()
    finally:
        converge_lab_stack()
    assert unit_prop(NODE1, UNIT, "InvocationID") == run_before
