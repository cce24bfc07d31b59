"""The fit check as the program runs it on a stack config: numbers per node, a stop with the
ways out when the layout cannot fit, and where the model's config comes from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.config import load_stack_file
from components.sizing.stack_fit import PreflightError, check_stack_fit, stack_fit

REPO = Path(__file__).resolve().parents[3]


def spec(stack: str):
    return load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")


def tiny_lab():
    """The lab stack with the deployments of its first model (tiny) alone: the tests below swap
    that model's source."""
    lab = spec("lab")
    return lab.model_copy(update={"deployments": [d for d in lab.deployments if d.model == lab.models[0].name]})


def test_spark_duo_reports_the_fit_of_both_sparks_offline():
    lines: list[str] = []
    fits = check_stack_fit(spec("spark-duo"), offline=True, log=lines.append)
    assert fits[0].report.fits
    assert fits[0].source.startswith("catalog")
    assert any(line.strip().startswith("spark-1a32/gpu0: weights 62.5 GB") for line in lines)
    assert any(line.strip().startswith("spark-5be3/gpu0: weights 62.5 GB") for line in lines)


def test_the_122b_model_on_one_spark_stops_the_plan_with_the_ways_out():
    duo = spec("spark-duo")
    one = duo.deployments[0].model_copy(update={"nodes": ["spark-1a32"], "topology": "single", "tensor_parallel": 1})
    single = duo.model_copy(update={"deployments": [one]})
    with pytest.raises(PreflightError) as err:
        check_stack_fit(single, offline=True, log=lambda _: None)
    text = str(err.value)
    assert "deployment qwen35" in text and "Nothing was changed" in text
    assert "125.0 GB" in text


def test_a_local_model_is_read_from_its_directory(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 1, "hidden_size": 128, "torch_dtype": "bfloat16"}))
    (model / "model.safetensors").write_bytes(b"\0" * 4096)
    lab = tiny_lab()
    tiny = lab.models[0].model_copy(update={"source": lab.models[0].source.model_copy(update={"path": str(model)})})
    fit = stack_fit(lab.model_copy(update={"models": [tiny]}), offline=True)[0]
    assert fit.source == str(model)
    assert fit.report.gpus[0].weight_bytes == 2048  # the lab's engine: tensor parallel 2 over both nodes


def test_a_hub_model_without_config_or_catalog_entry_is_reported_unchecked():
    lab = tiny_lab()
    unknown = lab.models[0].model_copy(update={
        "repo": "nobody/unknown-model", "revision": "0" * 40,
        "source": lab.models[0].source.model_copy(update={"kind": "hub", "path": None})})
    fit = stack_fit(lab.model_copy(update={"models": [unknown]}), offline=True)[0]
    assert fit.report is None
    assert "not checked" in fit.lines()[0]


@pytest.mark.parametrize("make", [lambda d: None, lambda d: d.mkdir(),
                                  lambda d: (d.mkdir(), (d / "weights.bin").write_bytes(b"x"))])
def test_a_local_model_directory_that_is_absent_or_no_model_stops_the_plan(tmp_path, make):
    lab = tiny_lab()
    directory = tmp_path / "tiny"
    make(directory)
    missing = lab.models[0].model_copy(update={"source": lab.models[0].source.model_copy(
        update={"path": str(directory)})})
    with pytest.raises(PreflightError) as err:
        stack_fit(lab.model_copy(update={"models": [missing]}), offline=True)
    text = str(err.value)
    assert str(directory) in text and "models.tiny.source.path" in text and "fix:" in text
    assert "Nothing was changed on any node." in text


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00garbage", b"[1, 2]",
                                     b'{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": "two"}'])
def test_a_broken_config_of_a_local_model_stops_the_plan_with_one_message(tmp_path, content):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_bytes(content)
    (model / "model.safetensors").write_bytes(b"\0" * 4096)
    lab = tiny_lab()
    broken = lab.models[0].model_copy(update={"source": lab.models[0].source.model_copy(update={"path": str(model)})})
    with pytest.raises(PreflightError) as err:
        check_stack_fit(lab.model_copy(update={"models": [broken]}), offline=True, log=lambda _: None)
    text = str(err.value)
    assert "deployment tiny" in text and "config.json" in text and "fix:" in text and "Nothing was changed" in text


def test_a_local_model_without_weights_stops_the_plan_with_one_message(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    lab = tiny_lab()
    empty = lab.models[0].model_copy(update={"source": lab.models[0].source.model_copy(update={"path": str(model)})})
    with pytest.raises(PreflightError, match=r"safetensors.*fix:"):
        check_stack_fit(lab.model_copy(update={"models": [empty]}), offline=True, log=lambda _: None)


def test_the_fit_reads_a_hub_model_from_its_mirror_with_its_token(tmp_path, monkeypatch):
    """The real huggingface_hub against the Hub stand-in on loopback: config.json and the size of
    a single-file model's weights come from `source.endpoint`, and the reads carry the hf_token."""
    from components.config.schema import ModelSpec
    from components.sizing.model_source import config_and_weight_bytes
    from tests.lab.hub import HubStandIn

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    (model / "model.safetensors").write_bytes(b"\0" * 12345)
    token = tmp_path / "token"
    token.write_text("hf_unitSentinel\n")
    commit = "0123456789abcdef0123456789abcdef01234567"
    with HubStandIn("owner/tiny", commit, model, host="127.0.0.1") as hub:
        m = ModelSpec.model_validate({"name": "tiny", "repo": "owner/tiny", "revision": commit,
                                      "hf_token": {"file": str(token)}, "fetch_node": "n1", "nodes": ["n1"],
                                      "source": {"kind": "hub", "endpoint": hub.url}})
        (config, weights), source = config_and_weight_bytes(m, offline=False)
    assert config["hidden_size"] == 64 and weights == 12345
    assert source == f"hub owner/tiny@{commit[:12]}"
    assert hub.requests and {a for _, p, a in hub.requests if "owner/tiny" in p} == {"Bearer hf_unitSentinel"}


def test_the_prediction_sizes_the_kv_cache_each_engine_its_own_way():
    """vLLM and SGLang: what their memory share leaves after weights and overhead, in tokens of
    this layout's KV bytes per token; the prediction line and output carry it."""
    fit = stack_fit(spec("spark-duo"), offline=True)[0]
    p, r = fit.prediction, fit.report
    assert p.kv_bytes_per_token == r.kv_bytes_per_token_per_gpu > 0
    room = r.worst.budget_bytes - r.worst.weight_bytes - r.worst.fixed_state_bytes - r.worst.overhead_bytes
    assert p.kv_tokens == room // p.kv_bytes_per_token
    assert p.max_concurrency == round(p.kv_tokens / r.max_model_len, 2)
    assert "--gpu-memory-utilization 0.8" in p.kv_sized_by
    assert any(line.strip().startswith("prediction per GPU: weights 62.50 GB") for line in fit.lines())
    assert fit.prediction.as_output()["kv_tokens"] == p.kv_tokens
    sglang = stack_fit(spec("spark-duo-sglang"), offline=True)[0].prediction
    assert "--mem-fraction-static 0.8" in sglang.kv_sized_by


def test_vllm_cpu_kv_space_sets_the_prediction():
    """vLLM's CPU build holds VLLM_CPU_KVCACHE_SPACE GiB of KV per rank, whatever its share says."""
    duo = spec("spark-duo")
    d = duo.deployments[0].model_copy(update={"env": {**duo.deployments[0].env, "VLLM_CPU_KVCACHE_SPACE": "2"}})
    fit = stack_fit(duo.model_copy(update={"deployments": [d]}), offline=True)[0]
    assert fit.prediction.kv_tokens == 2 * 2**30 // fit.prediction.kv_bytes_per_token
    assert fit.prediction.kv_sized_by == "2 GiB set for it"
    d = duo.deployments[0].model_copy(update={"extra_args": ["--kv-cache-memory-bytes", "3G"]})
    fit = stack_fit(duo.model_copy(update={"deployments": [d]}), offline=True)[0]
    assert fit.prediction.kv_tokens == 3 * 2**30 // fit.prediction.kv_bytes_per_token
