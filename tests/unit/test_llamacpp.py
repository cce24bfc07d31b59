"""The llama.cpp engine (components/engines/llamacpp.py, templates/scripts/engine_llamacpp.py): its
command line and environment, the schema's refusals (multi-node, a split, a missing or pathed
GGUF file), the GGUF header reader on a real GGUF file, the fit check's facts from it, and the
probe's model check."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from components.config import load_stack_file
from components.config.schema import DeploymentSpec
from components.engines import ENGINES, ModelFileError
from components.engines.llamacpp import gguf_reader
from components.launches import launch_of

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ENGINES["llamacpp"]
BASE = dict(name="g", engine="llamacpp", image="i", model="m", nodes=["a"], served_name="tiny-gguf",
            extra_args=["--model", "tiny.gguf"])


def deployment(**over) -> DeploymentSpec:
    return DeploymentSpec.model_validate({**BASE, **over})


def lab_deployment() -> DeploymentSpec:
    lab = load_stack_file(ROOT / "stacks" / "Pulumi.lab.yaml")
    return next(d for d in lab.deployments if d.engine == "llamacpp")


# A GGUF v3 file written byte by byte (the format of ggml/include/gguf.h): what
# make_tiny_gguf.py's gguf-py writes, without the package.
def _str(s: str) -> bytes:
    return struct.pack("<Q", len(s.encode())) + s.encode()


def _kv(key: str, kind: int, value) -> bytes:
    body = {4: lambda v: struct.pack("<I", v), 8: _str, 6: lambda v: struct.pack("<f", v)}[kind](value)
    return _str(key) + struct.pack("<I", kind) + body


def write_gguf(path: Path, *, context=2048, layers=2, heads=2, kv_heads=1, embd=128) -> Path:
    tokens = ["<unk>", "\u2581Hello", "!"]
    kvs = [_kv("general.architecture", 8, "llama"), _kv("llama.context_length", 4, context),
           _kv("llama.block_count", 4, layers), _kv("llama.embedding_length", 4, embd),
           _kv("llama.attention.head_count", 4, heads), _kv("llama.attention.head_count_kv", 4, kv_heads),
           _kv("llama.attention.layer_norm_rms_epsilon", 6, 1e-5),
           # the tokenizer's arrays: skipped by the reader (a string array and a float array)
           _str("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, len(tokens)) + b"".join(map(_str, tokens)),
           _str("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, len(tokens)) + b"\0" * 4 * len(tokens),
           _kv("general.name", 8, "unit tiny")]
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs) + b"\0" * 4096)
    return path


def test_the_lab_deployment_renders_llama_servers_own_command_line():
    d = lab_deployment()
    assert ENGINE.argv(d, "/models/x") == [
        "llama-server", "--model", "/models/x/tiny-llama-f32.gguf", "--alias", "tiny-llama-gguf",
        "--host", "0.0.0.0", "--port", "8003", "--ctx-size", "256", "--metrics", "--threads", "1"]
    assert ENGINE.env(d) == {}
    assert ENGINE.api_key_var == "LLAMA_API_KEY"   # llama-server's --api-key from the environment
    assert (ENGINE.health_path, ENGINE.metrics_path) == ("/health", "/metrics")
    assert [list(r.argv) for r in launch_of(d).ranks(d, "/models/x", None)] == [ENGINE.argv(d, "/models/x")]


def test_the_command_line_maps_the_common_keys():
    d = deployment(max_num_seqs=4, kv_cache_dtype="q8_0", bind="127.0.0.1", extra_args=["--metrics", "-m", "a.gguf"])
    argv = ENGINE.argv(d, "/c")
    assert argv[:3] == ["llama-server", "--model", "/c/a.gguf"]
    assert argv[argv.index("--parallel") + 1] == "4"
    assert argv[argv.index("--cache-type-k") + 1] == argv[argv.index("--cache-type-v") + 1] == "q8_0"
    assert argv.count("--metrics") == 1 and "-m" not in argv and argv[argv.index("--host") + 1] == "127.0.0.1"


@pytest.mark.parametrize("topology", ["ray", "native"])
def test_the_schema_refuses_a_multi_node_launch_naming_the_key(topology):
    with pytest.raises(ValueError, match=rf"topology: '{topology}' is not a launch of llamacpp; fix: use one of "
                                         r"single \(llama-server serves on one node\)"):
        deployment(nodes=["a", "b"], topology=topology)


@pytest.mark.parametrize("over, key", [
    (dict(tensor_parallel=2), "tensor_parallel/pipeline_parallel"),
    (dict(quantization="q4_k_m"), "quantization"),
    (dict(extra_args=[]), "extra_args"),
    (dict(extra_args=["--model", "a.gguf", "-m", "b.gguf"]), "extra_args"),
    (dict(extra_args=["--model", "/abs/a.gguf"]), "extra_args"),
    (dict(extra_args=["--model", "weights.bin"]), "extra_args"),
])
def test_the_schema_refuses_what_llama_server_cannot_serve(over, key):
    with pytest.raises(ValueError, match=rf"{key}: .*fix:"):
        deployment(**over)


def test_the_gguf_reader_reads_the_header(tmp_path):
    facts = gguf_reader().gguf_facts(str(write_gguf(tmp_path / "t.gguf")))
    assert facts == {"architecture": "llama", "name": "unit tiny", "context_length": 2048, "block_count": 2,
                     "embedding_length": 128, "head_count": 2, "head_count_kv": 1, "key_length": None,
                     "file_type": None, "size_bytes": (tmp_path / "t.gguf").stat().st_size}


@pytest.mark.parametrize("content, message", [(b"PK\3\4zip", "no GGUF magic"),
                                              (b"GGUF" + struct.pack("<I", 9), "version 9"),
                                              (b"GGUF" + struct.pack("<IQQ", 3, 0, 5), "ends inside its header")])
def test_the_gguf_reader_refuses_what_is_not_a_gguf_file(tmp_path, content, message):
    (tmp_path / "t.gguf").write_bytes(content)
    reader = gguf_reader()
    with pytest.raises(reader.GGUFError, match=message):
        reader.gguf_facts(str(tmp_path / "t.gguf"))


def test_the_fit_check_computes_with_the_gguf_facts(tmp_path):
    lab = load_stack_file(ROOT / "stacks" / "Pulumi.lab.yaml")
    d = lab_deployment()
    write_gguf(tmp_path / "tiny-llama-f32.gguf")
    model = lab.model(d.model).model_copy(update={"source": lab.model(d.model).source.model_copy(
        update={"path": str(tmp_path)})})
    (config, weights), source = ENGINE.fit_inputs(d, model)
    assert weights == (tmp_path / "tiny-llama-f32.gguf").stat().st_size and source.endswith("(GGUF)")
    assert config["num_hidden_layers"] == 2 and config["max_position_embeddings"] == 2048
    from components.sizing.model_facts import model_facts_from_config
    facts = model_facts_from_config(config, weight_bytes=weights)
    assert (facts.num_kv_heads, facts.head_dim, facts.dtype_bytes) == (1, 64, 2)   # f16 KV cache
    (tmp_path / "tiny-llama-f32.gguf").unlink()
    with pytest.raises(ModelFileError, match=r"tiny-llama-f32.gguf: .*fix: models.tiny-gguf.source.path"):
        ENGINE.fit_inputs(d, model)
    # the plan's fit check stops on it, naming the deployment
    from components.sizing.stack_fit import PreflightError, stack_fit
    with pytest.raises(PreflightError, match=r"(?s)deployment tiny-gguf: .*tiny-llama-f32.gguf.*Nothing was changed"):
        stack_fit(lab.model_copy(update={"deployments": [d], "models": [model]}), offline=True)
    assert ENGINES["vllm"].fit_inputs(lab.deployments[0], lab.models[0]) is None   # config.json: the default


def test_the_probe_reads_the_file_its_command_line_names(tmp_path, monkeypatch):
    reader = gguf_reader()
    path = write_gguf(tmp_path / "tiny.gguf")
    argv = ENGINE.argv(deployment(), str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["probe", "llamacpp", str(tmp_path), __import__("json").dumps([argv])])
    what, problems = reader.model_problems(str(tmp_path))
    assert what == f"tiny.gguf: GGUF llama, context 2048, 2 layers, {path.stat().st_size} bytes" and problems == []
    path.rename(tmp_path / "other.gguf")
    what, problems = reader.model_problems(str(tmp_path))
    assert problems == [f"{path}: no such file in the model's cache (it holds: other.gguf); fix: name one of "
                        f"them in extra_args: [--model, FILE.gguf]"]


def test_the_flag_check_falls_back_to_llama_servers_help(monkeypatch):
    """No Python parser: the flag names are checked against `llama-server --help` (here a piece of
    the real text), and an unknown flag is a problem."""
    sys.path.insert(0, str(ROOT / "templates" / "scripts"))
    try:
        import engine_flags
        monkeypatch.setattr(engine_flags, "help_text", lambda engine: (
            "-m,    --model FNAME      model path to load\n-a,    --alias STRING   set model name aliases\n"
            "--host HOST\n--port PORT\n-c,    --ctx-size N\n--metrics\n-t,    --threads N\n"))
        argv = ENGINE.argv(deployment(extra_args=["--model", "t.gguf", "--threads", "1"]), "/c")
        checked, problems = engine_flags.check("llamacpp", argv)
        assert "flag names checked against its --help text" in checked and problems == []
        checked, problems = engine_flags.check("llamacpp", argv + ["--bogus-flag", "1"])
        assert len(problems) == 1 and problems[0].startswith("--bogus-flag: unknown to llamacpp")
    finally:
        sys.path.remove(str(ROOT / "templates" / "scripts"))
        for name in ("engine_flags", "engine_llamacpp"):
            sys.modules.pop(name, None)


# Its memory semantics, its own (llama.cpp's common/arg.cpp and llama_context, the lab's pinned tree).
def test_each_request_gets_max_model_len_the_slots_share_the_context():
    """llama-server splits --ctx-size over its --parallel slots: max_model_len per request takes
    max_model_len × slots; without --parallel, a unified cache of max_model_len."""
    argv = ENGINE.argv(deployment(max_model_len=4096, max_num_seqs=4), "/c")
    assert argv[argv.index("--ctx-size") + 1] == str(4 * 4096)
    argv = ENGINE.argv(deployment(max_model_len=4096), "/c")
    assert argv[argv.index("--ctx-size") + 1] == "4096" and "--parallel" not in argv
    # The KV cache it allocates: n_ctx padded to 256 cells.
    assert ENGINE.kv_tokens_allocated(deployment(max_model_len=1000, max_num_seqs=3)) == 3072


@pytest.mark.parametrize("dtype", ["fp8", "fp8_e4m3", "bfloat16", "float16", "int3"])
def test_a_kv_dtype_llama_server_does_not_take_is_refused_with_its_own_list(dtype):
    with pytest.raises(ValueError, match=rf"kv_cache_dtype: '{dtype}' is not a KV cache dtype of llamacpp, which "
                                         r"takes auto, f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1"):
        deployment(kv_cache_dtype=dtype)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "q8_0", "q4_0", "iq4_nl", "q5_1"])
def test_its_own_kv_dtypes_reach_both_cache_flags(dtype):
    argv = ENGINE.argv(deployment(kv_cache_dtype=dtype), "/c")
    assert argv[argv.index("--cache-type-k") + 1] == argv[argv.index("--cache-type-v") + 1] == dtype


def test_a_memory_fraction_is_refused_it_takes_none():
    with pytest.raises(ValueError, match=r"memory_fraction: llamacpp takes no memory share: llama-server allocates "
                                         r".* fix: remove memory_fraction"):
        deployment(memory_fraction=0.5)
    assert ENGINE.memory_budget_fraction(deployment()) == 1.0
