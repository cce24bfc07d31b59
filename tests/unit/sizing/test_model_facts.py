"""Model facts from config.json / safetensors index / a weights directory."""

import os

import pytest

from components.sizing.model_facts import (
    GB,
    ModelFacts,
    kv_dtype_bytes,
    model_facts_from_config,
    safetensors_dir_bytes,
    weight_bytes_from_index,
)
from fixtures_sizing import (
    LLAMA31_8B_CONFIG,
    QWEN3_NEXT_80B_A3B_CONFIG,
    QWEN35_122B_A10B_FP8_CONFIG,
    QWEN35_122B_A10B_FP8_WEIGHT_BYTES,
    QWEN35_397B_A17B_NVFP4_CONFIG,
    QWEN35_397B_A17B_NVFP4_WEIGHT_BYTES,
)


@pytest.mark.parametrize(
    "config, weight, expected",
    [
        # name: (kv_layers, linear_layers, kv_heads, head_dim, whole-model KV bytes/token at bf16)
        pytest.param(
            QWEN35_122B_A10B_FP8_CONFIG, QWEN35_122B_A10B_FP8_WEIGHT_BYTES,
            (12, 36, 2, 256, 12 * 2 * 2 * 256 * 2), id="qwen3.5-122b-layer_types-in-text_config",
        ),
        pytest.param(
            QWEN35_397B_A17B_NVFP4_CONFIG, QWEN35_397B_A17B_NVFP4_WEIGHT_BYTES,
            (15, 45, 2, 256, 15 * 2 * 2 * 256 * 2), id="qwen3.5-397b-interval-in-text_config",
        ),
        pytest.param(
            QWEN3_NEXT_80B_A3B_CONFIG, 160 * GB,
            (12, 36, 2, 256, 12 * 2 * 2 * 256 * 2), id="qwen3-next-interval-top-level",
        ),
        pytest.param(
            LLAMA31_8B_CONFIG, 16 * GB,
            (32, 0, 8, 128, 32 * 2 * 8 * 128 * 2), id="llama-dense-head_dim-derived",
        ),
    ],
)
def test_facts_from_config(config, weight, expected):
    kv_layers, linear_layers, kv_heads, head_dim, kv_per_token = expected
    facts = model_facts_from_config(config, weight_bytes=weight)
    assert facts.weight_bytes == weight
    assert facts.kv_layers == kv_layers
    assert facts.linear_layers == linear_layers
    assert facts.num_kv_heads == kv_heads
    assert facts.head_dim == head_dim
    assert facts.dtype_bytes == 2
    assert facts.kv_bytes_per_token() == kv_per_token


def test_qwen35_122b_kv_per_token_numbers():
    facts = model_facts_from_config(QWEN35_122B_A10B_FP8_CONFIG, weight_bytes=QWEN35_122B_A10B_FP8_WEIGHT_BYTES)
    assert facts.architecture == "Qwen3_5MoeForConditionalGeneration"
    assert facts.model_type == "qwen3_5_moe_text"
    assert facts.kv_bytes_per_token() == 24_576  # 24 KiB per token for the whole model
    # TP=2: each rank keeps 1 of the 2 KV heads.
    assert facts.kv_bytes_per_token(tensor_parallel_size=2) == 12_288
    # TP=4: fewer heads than ranks -> replicated, still 1 head per rank.
    assert facts.kv_bytes_per_token(tensor_parallel_size=4) == 12_288
    # PP=2: 6 KV layers per stage.
    assert facts.kv_bytes_per_token(pipeline_parallel_size=2) == 12_288
    assert facts.kv_bytes_per_token(pipeline_parallel_size=5) == 3 * 2 * 2 * 256 * 2  # ceil(12/5)=3


def test_linear_state_of_qwen35_397b():
    facts = model_facts_from_config(QWEN35_397B_A17B_NVFP4_CONFIG, weight_bytes=QWEN35_397B_A17B_NVFP4_WEIGHT_BYTES)
    recurrent = 64 * 128 * 128 * 4  # fp32 state matrix per value head
    conv = 3 * (2 * 16 * 128 + 64 * 128) * 2  # (kernel-1) x conv channels, bf16
    assert facts.linear_state_bytes_per_layer == recurrent + conv == 4_268_032
    assert facts.linear_state_bytes_per_seq() == 45 * 4_268_032
    assert facts.linear_state_bytes_per_seq(tensor_parallel_size=4) == 45 * 1_067_008


@pytest.mark.parametrize(
    "kv_dtype, expected",
    [("auto", 2), ("AUTO", 2), ("fp8", 1), ("fp8_e4m3", 1), ("fp8_e5m2", 1), ("bfloat16", 2), ("float32", 4)],
)
def test_kv_dtype_bytes(kv_dtype, expected):
    assert kv_dtype_bytes(kv_dtype, model_dtype_bytes=2) == expected


def test_kv_dtype_auto_follows_model_dtype_and_unknown_is_rejected():
    assert kv_dtype_bytes("auto", model_dtype_bytes=4) == 4
    with pytest.raises(ValueError, match="unknown kv cache dtype 'int3'"):
        kv_dtype_bytes("int3")


@pytest.mark.parametrize(
    "config",
    [QWEN35_122B_A10B_FP8_CONFIG, QWEN35_397B_A17B_NVFP4_CONFIG, LLAMA31_8B_CONFIG],
    ids=["122b", "397b", "llama"],
)
def test_fp8_kv_halves_kv_bytes(config):
    facts = model_facts_from_config(config, weight_bytes=GB)
    for tp in (1, 2, 4):
        auto = facts.kv_bytes_per_token("auto", tp)
        fp8 = facts.kv_bytes_per_token("fp8", tp)
        assert fp8 * 2 == auto
        assert facts.kv_bytes_per_token("fp8_e4m3", tp) == fp8


def test_dtype_float32_and_mla():
    cfg = {
        "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512,
        "torch_dtype": "float32", "kv_lora_rank": 512, "qk_rope_head_dim": 64,
    }
    facts = model_facts_from_config(cfg, weight_bytes=GB)
    assert facts.dtype_bytes == 4
    assert facts.mla_latent_dim == 576
    # MLA: one latent per token per layer, replicated on every TP rank.
    assert facts.kv_bytes_per_token() == 4 * 576 * 4
    assert facts.kv_bytes_per_token(tensor_parallel_size=8) == 4 * 576 * 4


def test_layer_types_wins_over_interval_and_length_is_checked():
    cfg = dict(QWEN3_NEXT_80B_A3B_CONFIG)
    cfg["layer_types"] = ["full_attention"] * 6 + ["linear_attention"] * 42
    facts = model_facts_from_config(cfg, weight_bytes=GB)
    assert (facts.kv_layers, facts.linear_layers) == (6, 42)
    cfg["layer_types"] = ["full_attention"] * 47
    with pytest.raises(ValueError, match="47 entries but num_hidden_layers is 48"):
        model_facts_from_config(cfg, weight_bytes=GB)


def test_weight_from_index_when_no_bytes_given():
    index = {"metadata": {"total_size": 125_089_123_456}, "weight_map": {"lm_head.weight": "model-00001.safetensors"}}
    facts = model_facts_from_config(QWEN35_122B_A10B_FP8_CONFIG, index_json=index)
    assert facts.weight_bytes == 125_089_123_456
    with pytest.raises(ValueError, match="give weight_bytes"):
        model_facts_from_config(QWEN35_122B_A10B_FP8_CONFIG)


def test_config_without_layers_is_rejected():
    with pytest.raises(ValueError, match="num_hidden_layers"):
        model_facts_from_config({"architectures": ["X"], "text_config": {}}, weight_bytes=GB)


# ------------------------------------------------------------------ weight size sources


@pytest.mark.parametrize(
    "index, expected",
    [
        ({"metadata": {"total_size": 234_123_456_789}, "weight_map": {}}, 234_123_456_789),
        ({"metadata": {"total_size": "125000000000"}}, 125_000_000_000),  # some exporters write a string
        ({"metadata": {"total_size": 1.0e9}}, 1_000_000_000),
    ],
)
def test_weight_bytes_from_index(index, expected):
    assert weight_bytes_from_index(index) == expected


@pytest.mark.parametrize(
    "index, match",
    [
        ({"weight_map": {}}, "no metadata.total_size"),
        ({"metadata": {}}, "no metadata.total_size"),
        ({"metadata": {"total_size": "lots"}}, "not an integer"),
        ({"metadata": {"total_size": 1.5}}, "not an integer"),
        ({"metadata": {"total_size": 0}}, "must be positive"),
    ],
)
def test_weight_bytes_from_index_rejects(index, match):
    with pytest.raises(ValueError, match=match):
        weight_bytes_from_index(index)


def _write(path, size):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\0" * size)


def test_safetensors_dir_bytes(tmp_path):
    _write(tmp_path / "model-00001-of-00002.safetensors", 1000)
    _write(tmp_path / "model-00002-of-00002.safetensors", 2345)
    _write(tmp_path / "pytorch_model.bin", 99999)  # not counted
    _write(tmp_path / "config.json", 50)  # not counted
    _write(tmp_path / "sub" / "extra.safetensors", 7)  # only with recursive=True
    # HF cache layout: the snapshot holds a symlink to a blob; the blob's size counts.
    _write(tmp_path / "blobs" / "abc123", 4000)
    os.symlink(tmp_path / "blobs" / "abc123", tmp_path / "model-linked.safetensors")

    assert safetensors_dir_bytes(tmp_path) == 1000 + 2345 + 4000
    assert safetensors_dir_bytes(tmp_path, recursive=True) == 1000 + 2345 + 4000 + 7


def test_safetensors_dir_bytes_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no \\*.safetensors files"):
        safetensors_dir_bytes(tmp_path)
    with pytest.raises(FileNotFoundError, match="not a directory"):
        safetensors_dir_bytes(tmp_path / "missing")


def test_model_facts_is_frozen():
    facts = ModelFacts(weight_bytes=1, num_hidden_layers=1, kv_layers=1, linear_layers=0, num_kv_heads=1, head_dim=1)
    with pytest.raises(Exception):
        facts.weight_bytes = 2


def test_sliding_window_layers_are_a_fixed_cost_per_sequence_not_per_token():
    """gpt-oss-style layer_types: the sliding layers' KV stops at the window; without a window in
    the config they count in full (conservative)."""
    cfg = {"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
           "layer_types": ["sliding_attention", "full_attention"] * 2, "sliding_window": 128}
    facts = model_facts_from_config(cfg, weight_bytes=1)
    assert (facts.kv_layers, facts.sliding_layers, facts.sliding_window) == (2, 2, 128)
    assert facts.kv_bytes_per_token() == 2 * 2 * 2 * 64 * 2
    assert facts.sliding_kv_bytes_per_seq() == 2 * 2 * 2 * 64 * 2 * 128
    assert facts.sliding_kv_bytes_per_seq("fp8", tensor_parallel_size=2) == 2 * 2 * 1 * 64 * 1 * 128
    windowless = model_facts_from_config({**cfg, "sliding_window": None}, weight_bytes=1)
    assert (windowless.kv_layers, windowless.sliding_layers) == (4, 0)
    assert windowless.sliding_kv_bytes_per_seq() == 0
