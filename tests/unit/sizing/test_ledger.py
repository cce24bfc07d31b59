"""The memory ledger's measurement: each engine's own log line of its KV cache, read from the
health gate's output, and the error of the prediction against it."""

from __future__ import annotations

import pytest

from components.config.schema import DeploymentSpec
from components.sizing.ledger import Prediction, ledger_entry, measure, parse_size

BASE = dict(name="x", image="i", model="m", nodes=["a"], served_name="x")
D = {"vllm": DeploymentSpec.model_validate({**BASE, "engine": "vllm"}),
     "sglang": DeploymentSpec.model_validate({**BASE, "engine": "sglang"}),
     "llamacpp": DeploymentSpec.model_validate({**BASE, "engine": "llamacpp", "extra_args": ["--model", "x.gguf"]})}
# Each engine's line as it logs it (vLLM 0.32's kv_cache_utils, SGLang's memory pool, llama.cpp's llama_kv_cache).
LINES = {
    "vllm": "(EngineCore pid=81) INFO 12-05 21:40:01 [kv_cache_utils.py:1310] CPU KV cache size: 43,680 tokens, "
            "Maximum concurrency for 512 tokens per request: 85.31x",
    "sglang": "[2026-12-05 21:40:01 TP0] KV Cache is allocated. #tokens: 1048576, K size: 6.00 GB, V size: 6.00 GB",
    # the lab's llama-server at its default verbosity (its slots share one unified cache)
    "llamacpp": "0.00.034.295 I srv    load_model: initializing, n_slots = 4, n_ctx_slot = 256, kv_unified = 'true'",
}
TOKENS = {"vllm": 43_680, "sglang": 1_048_576, "llamacpp": 256}


def test_llama_server_s_cells_are_its_slots_context_unless_they_share_one_cache():
    line = "srv    load_model: initializing, n_slots = 4, n_ctx_slot = 1024, kv_unified = 'false'"
    assert measure(D["llamacpp"], f"kv-report={line}\n")["kv_tokens"] == 4096


@pytest.mark.parametrize("engine", sorted(LINES))
def test_each_engine_s_own_line_gives_its_kv_tokens(engine):
    out = f'{{"choices": []}}\nkv-report={LINES[engine]}\nmemory-usage=1.5GiB\n'
    assert measure(D[engine], out) == {"kv_tokens": TOKENS[engine], "memory_bytes": int(1.5 * 2**30)}


def test_the_last_start_s_line_counts_and_another_engine_s_line_does_not():
    out = f"kv-report={LINES['vllm'].replace('43,680', '10')}\nkv-report={LINES['vllm']}\n"
    assert measure(D["vllm"], out)["kv_tokens"] == 43_680
    assert measure(D["sglang"], f"kv-report={LINES['vllm']}\n")["kv_tokens"] is None


def test_nothing_said_is_none_not_zero():
    assert measure(D["vllm"], None) == {"kv_tokens": None, "memory_bytes": None}
    assert measure(D["vllm"], "memory-usage=\n")["memory_bytes"] is None
    assert measure(D["vllm"], "memory-usage=[not set]B\n")["memory_bytes"] is None


@pytest.mark.parametrize("text, size", [("512B", 512), ("1.5GiB", int(1.5 * 2**30)), ("3.2MiB", int(3.2 * 2**20)),
                                        ("12345B", 12345), ("2GB", 2 * 10**9), ("", None), ("7 parsecs", None)])
def test_sizes_as_docker_and_systemd_print_them(text, size):
    assert parse_size(text) == size


def test_the_entry_sets_the_prediction_beside_the_measurement_with_its_error():
    p = Prediction(weights_bytes=1, kv_bytes_per_token=2, kv_tokens=48_048, kv_sized_by="x", max_concurrency=1.0,
                   overhead_bytes=3)
    entry = ledger_entry(D["vllm"], p, f"kv-report={LINES['vllm']}\n")
    assert entry["predicted"]["kv_tokens"] == 48_048 and entry["measured"]["kv_tokens"] == 43_680
    assert entry["kv_tokens_error_pct"] == 10.0
    assert "kv_tokens_error_pct" not in ledger_entry(D["vllm"], p, "")
    assert ledger_entry(D["vllm"], None, "")["predicted"] is None
