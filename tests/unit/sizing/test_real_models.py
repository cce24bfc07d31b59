"""Real models on paper: the project's KV arithmetic against real configs, worked by hand.

The data files (data/real_models/*.json) hold the decoder fields of real config.json files and
their sources; real_models_table.py turns them into the table of docs/memory-ledger.md.
"""

from __future__ import annotations

import json

import pytest

from components.sizing.model_facts import model_facts_from_config
from real_models_table import (
    COMMAND,
    DATA_DIR,
    DOC,
    ONE_SPARK,
    SPARK_PAIR,
    generated_block,
    load_models,
    max_context,
)

#: Hand-worked whole-model KV bytes per token at --kv-cache-dtype auto (bf16, 2 bytes), per
#: data file: what one more token of context costs, every layer whose KV grows with it.
EXPECTED_KV_BYTES_PER_TOKEN = {
    # 12 full-attention layers (48 = 12 x [3 Gated DeltaNet + 1 attention]; DeltaNet state is
    # fixed per sequence) x K and V x 2 KV heads x head_dim 256 x 2 bytes
    "Qwen--Qwen3.5-122B-A10B.json": 12 * 2 * 2 * 256 * 2,
    "nvidia--Qwen3.5-122B-A10B-NVFP4.json": 12 * 2 * 2 * 256 * 2,
    # 15 full-attention layers of 60 x K and V x 2 KV heads x 256 x 2 bytes
    "nvidia--Qwen3.5-397B-A17B-NVFP4.json": 15 * 2 * 2 * 256 * 2,
    # 18 full-attention layers of 36 (the other 18 are sliding_attention, window 128: their KV
    # stops growing at 128 tokens) x K and V x 8 KV heads x head_dim 64 x 2 bytes (no dtype in
    # the config: bf16, the model card's activation dtype)
    "openai--gpt-oss-120b.json": 18 * 2 * 8 * 64 * 2,
    # 46 layers x K and V x 8 KV heads x head_dim 128 x 2 bytes
    "zai-org--GLM-4.5-Air.json": 46 * 2 * 8 * 128 * 2,
    # 80 layers x K and V x 8 KV heads x head_dim 128 x 2 bytes
    "meta-llama--Llama-3.3-70B-Instruct.json": 80 * 2 * 8 * 128 * 2,
    # MLA: 61 layers x one latent of (kv_lora_rank 512 + qk_rope_head_dim 64), shared by all 128
    # heads (no separate K and V) x 2 bytes
    "deepseek-ai--DeepSeek-V3.json": 61 * (512 + 64) * 2,
}

def _kv_cases():
    for name, expected in EXPECTED_KV_BYTES_PER_TOKEN.items():
        yield pytest.param(name, expected, id=name.removesuffix(".json"))


def _load(name: str) -> dict:
    return json.loads((DATA_DIR / name).read_text())


def test_every_data_file_has_a_hand_worked_figure():
    assert sorted(p.name for p in DATA_DIR.glob("*.json")) == sorted(EXPECTED_KV_BYTES_PER_TOKEN)


@pytest.mark.parametrize("name", sorted(EXPECTED_KV_BYTES_PER_TOKEN))
def test_data_file_names_its_sources(name):
    data = _load(name)
    org, model = data["repo"].split("/")
    assert name == f"{org}--{model}.json"
    assert data["source"] == f"https://huggingface.co/{data['repo']}/blob/main/config.json"
    assert data["weight_bytes_source"].startswith("https://")
    assert isinstance(data["weight_bytes"], int) and data["weight_bytes"] > 0
    assert isinstance(data["weight_bytes_exact"], bool)
    assert data["revision_note"].strip() and data["notes"].strip()
    assert data["config"]["architectures"] and data["config"]["model_type"]


@pytest.mark.parametrize("name, expected", list(_kv_cases()))
def test_kv_bytes_per_token_matches_the_hand_worked_figure(name, expected):
    data = _load(name)
    facts = model_facts_from_config(data["config"], weight_bytes=data["weight_bytes"])
    assert facts.kv_bytes_per_token("auto") == expected
    # fp8 KV is one byte per element: exactly half.
    assert facts.kv_bytes_per_token("fp8") * 2 == expected


def test_a_spark_pair_holds_a_longer_context_than_one_spark():
    for m in load_models():
        one, pair = max_context(m.facts, ONE_SPARK, "auto"), max_context(m.facts, SPARK_PAIR, "auto")
        if one is not None:
            assert pair is not None and pair > one, m.repo


def test_the_memory_ledger_holds_the_generated_table():
    assert DOC.is_file(), f"{DOC} is missing; regenerate it: {COMMAND}"
    assert generated_block() in DOC.read_text(), (
        f"docs/memory-ledger.md does not hold the table the data files give; regenerate it: {COMMAND}"
    )
