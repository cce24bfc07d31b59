"""llama.cpp: its C++ `llama-server` serving one GGUF file on one node (what DGX Spark owners run
for GGUF models; ggml-org's image ghcr.io/ggml-org/llama.cpp:server-cuda carries it).

Single node only: llama-server has no multi-node launch of its own here (its RPC backend is not a
launch this project drives), so the schema refuses `topology: ray` and `native` for it, and a
split over several GPUs (tensor_parallel, pipeline_parallel) too.

The model's file: a GGUF repository holds one file per quantization, so the deployment names the
one to serve with llama-server's own flag, `extra_args: [--model, FILE.gguf]`, a bare file name
that argv() resolves in the model's cache directory (the schema checks its form; the probe, that
the file is there and its header reads). quantization: does not apply (the file is quantized).

What it needs from its runtime: `llama-server` on the image's PATH; python3 (standard library
only) in the image for the probe, which reads the GGUF header and checks the flags against
`llama-server --help`; its API key in LLAMA_API_KEY (llama-server reads --api-key from it).
/health answers without the key; /metrics exists only with --metrics, which argv() adds.

What it reads of the model repository: the named file alone (the tokenizer and chat template are
in the GGUF header; a config.json or a tokenizer beside it is not read), or, for a file split by
llama.cpp's gguf-split (PREFIX-00001-of-0000N.gguf, the part --model names), every part of it: a
hub download fetches that and nothing else (model_files)."""

from __future__ import annotations

import glob
import importlib.util
import re
from functools import cache
from pathlib import Path

from components import TEMPLATES
from components.engines.base import Engine, ModelFileError

MODEL_FLAGS = ("--model", "-m")
# llama.cpp's name of one part of a split GGUF file (llama_split_path: "%s-%05d-of-%05d.gguf");
# llama-server is given the first and opens the others beside it.
SPLIT_PART = re.compile(r"(?P<prefix>.+)-(?P<part>[0-9]{5})-of-(?P<count>[0-9]{5})\.gguf")
# The probe's own module: its GGUF header reader serves the fit check here too (one reader).
PROBE_MODULE = TEMPLATES / "scripts" / "engine_llamacpp.py"


@cache
def gguf_reader():
    """templates/scripts/engine_llamacpp.py, loaded as a module."""
    spec = importlib.util.spec_from_file_location("engine_llamacpp", PROBE_MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def model_file(d) -> str | None:
    """The GGUF file named by extra_args' --model, or None."""
    args = list(d.extra_args)
    for i, arg in enumerate(args[:-1]):
        if arg in MODEL_FLAGS:
            return args[i + 1]
    return None


def model_file_patterns(name: str) -> list[str]:
    """The fnmatch patterns of the file `name` and, when it is a split part, of all its parts."""
    split = SPLIT_PART.fullmatch(name)
    if split is None:
        return [glob.escape(name)]
    return [f"{glob.escape(split['prefix'])}-?????-of-{split['count']}.gguf"]


def without_model(args: list[str]) -> list[str]:
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in MODEL_FLAGS:
            skip = True
        else:
            out.append(arg)
    return out


class LlamaCpp(Engine):
    name = "llamacpp"
    launches = frozenset({"single"})
    api_key_var = "LLAMA_API_KEY"
    probe_module = "engine_llamacpp"
    # every llama_decode() call (tokens_predicted_total lands when a request ends)
    progress_counters = ("llamacpp:n_decode_total",)
    images_download = False   # ggml-org's server images carry llama-server, no python3 nor huggingface_hub
    memory_sized_by = ("llama-server allocates the model file's weights and a KV cache of --ctx-size tokens "
                       "(max_model_len × max_num_seqs), no more")
    # common/arg.cpp's kv_cache_types (--cache-type-k/-v); auto: no flag, its default f16.
    kv_cache_dtypes = ("auto", "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
    smaller_kv_dtype = "q8_0"
    programs = ("llama-server", "llama.cpp", "llama_cpp")
    # llama-server's own line at its default verbosity (libllama's "llama_kv_cache: size = ..."
    # shows only at a higher one): "load_model: initializing, n_slots = 4, n_ctx_slot = 256,
    # kv_unified = 'true'" (tools/server/server-context.cpp).
    kv_report_marker = "load_model: initializing, n_slots"
    kv_report_pattern = r"n_slots = (?P<slots>[0-9]+), n_ctx_slot = (?P<ctx>[0-9]+), kv_unified = '(?P<unified>\w+)'"

    def argv(self, d, model_path, rank=0, head_address=None):
        argv = ["llama-server",
                "--model", f"{model_path}/{model_file(d)}",
                "--alias", d.served_name,
                "--host", str(d.bind), "--port", str(d.port),
                "--ctx-size", str(self.ctx_size(d))]
        if d.max_num_seqs:
            argv += ["--parallel", str(d.max_num_seqs)]
        if d.kv_cache_dtype != "auto":
            argv += ["--cache-type-k", d.kv_cache_dtype, "--cache-type-v", d.kv_cache_dtype]
        if "--metrics" not in d.extra_args:
            argv += ["--metrics"]   # Prometheus /metrics, as vLLM serves it unasked (the scrape config)
        return argv + without_model(list(d.extra_args))

    def model_files(self, d):
        return model_file_patterns(model_file(d))

    @staticmethod
    def ctx_size(d) -> int:
        """--ctx-size: llama-server splits it over its --parallel slots (llama_context's n_ctx_seq =
        n_ctx / n_seq_max without a unified KV cache), so max_model_len per request takes
        max_model_len × slots; without --parallel it runs a unified cache every slot draws from."""
        return d.max_model_len * (d.max_num_seqs or 1)

    def kv_tokens_reported(self, line):
        # Its cells: one cache every slot draws from (unified), or n_ctx_slot cells per slot.
        found = re.search(self.kv_report_pattern, line)
        if found is None:
            return None
        ctx, slots = int(found["ctx"]), int(found["slots"])
        return ctx if found["unified"] == "true" else ctx * slots

    def kv_tokens_allocated(self, d):
        # llama_context pads n_ctx to a multiple of 256 (GGML_PAD(n_ctx, 256)).
        return -(-self.ctx_size(d) // 256) * 256

    def layout_problem(self, d):
        problem = super().layout_problem(d)
        if problem:
            return f"{problem} (llama-server serves on one node)"
        if d.tensor_parallel > 1 or d.pipeline_parallel > 1:
            return ("tensor_parallel/pipeline_parallel: llamacpp serves on one GPU here; fix: set both to 1 "
                    "(or use vllm or sglang)")
        if d.quantization:
            return "quantization: a GGUF file is quantized already; fix: remove it and name the file in extra_args"
        name = model_file(d)
        if sum(a in MODEL_FLAGS for a in d.extra_args) != 1 or not name:
            return ("extra_args: llamacpp serves one GGUF file of the model; fix: name it once, "
                    "extra_args: [--model, FILE.gguf]")
        if "/" in name or not name.endswith(".gguf") or name.startswith("."):
            return (f"extra_args: --model {name!r} must be a file name ending .gguf in the model's directory "
                    f"(no path); fix: extra_args: [--model, FILE.gguf]")
        split = SPLIT_PART.fullmatch(name)
        if split and split["part"] != "00001":
            return (f"extra_args: --model {name!r} is part {int(split['part'])} of a split GGUF file; llama-server "
                    f"opens the first; fix: --model {split['prefix']}-00001-of-{split['count']}.gguf")
        return None

    def fit_inputs(self, d, model):
        """The fit check's facts from the GGUF header of the named file (local models; a hub GGUF
        repository has no config.json to read, so its fit goes unchecked unless the catalog knows
        it): the file's size is the weights (all its parts' when split), the layers and heads size
        the KV cache (f16, llama.cpp's default)."""
        if model.source.kind != "local":
            return None
        reader = gguf_reader()
        path = Path(model.source.path).expanduser() / model_file(d)
        try:
            facts = reader.gguf_facts(str(path))
        except (OSError, reader.GGUFError) as exc:
            raise ModelFileError(f"{path}: {exc}; fix: models.{model.name}.source.path holds the GGUF file the "
                                   f"deployment names (extra_args: [--model, FILE.gguf])") from None
        # The weights of a split file are all its parts (the header is in the first).
        weights = sum(f.stat().st_size for pattern in self.model_files(d) for f in path.parent.glob(pattern))
        config = {"architectures": [facts["architecture"]], "model_type": facts["architecture"],
                  "num_hidden_layers": facts["block_count"], "num_attention_heads": facts["head_count"],
                  "num_key_value_heads": facts["head_count_kv"], "hidden_size": facts["embedding_length"],
                  "head_dim": facts["key_length"], "max_position_embeddings": facts["context_length"],
                  "torch_dtype": "float16"}
        return (config, weights), f"{path} (GGUF)"
