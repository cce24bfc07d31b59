"""Facts about a model that the memory-fit check needs, read from its files.

Pure functions on data: a ``config.json`` (as a dict), a ``model.safetensors.index.json``
(as a dict) or a local directory of ``*.safetensors`` files.  Nothing here touches the
network or Pulumi.

Config shapes handled
---------------------
* Plain causal LMs (Llama, Qwen3, Qwen3-MoE, ...): every decoder layer keeps a KV cache.
* Hybrid linear/full attention (Qwen3-Next, Qwen3.5 / Qwen3.5-MoE): only the
  ``full_attention`` layers keep a KV cache that grows with the sequence; the Gated
  DeltaNet (``linear_attention``) layers keep a small fixed-size recurrent state per
  sequence.  Checked against public configs and model cards:

  - Qwen3.5 configs carry both ``layer_types`` (a list of ``"linear_attention"`` /
    ``"full_attention"``, one per layer) and ``full_attention_interval`` (4).
  - Qwen3-Next configs carry ``full_attention_interval``; ``layer_types`` may be absent
    in older revisions, in which case layer ``i`` is full attention when
    ``(i + 1) % full_attention_interval == 0`` (the convention of the reference
    implementations).  When both are present, ``layer_types`` wins.
* ``*ForConditionalGeneration`` wrappers (Qwen3.5 / Qwen3.5-MoE, VL models): the decoder's
  fields live under ``text_config`` (we also accept ``llm_config`` / ``language_config``,
  used by other multimodal families; unconfirmed for Qwen, hence only as fallbacks).  A
  field in the nested config wins over the same field at top level.
* MLA models (DeepSeek-V2/V3 style, ``kv_lora_rank``): one compressed latent per token
  per layer, replicated on every tensor-parallel rank.

Units: bytes everywhere.  ``GB`` (10**9) is used for operator-facing numbers, ``GiB`` for
defaults that are naturally binary.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field

GB = 10**9
GiB = 2**30

#: Bytes per element of a KV cache dtype, by every engine's spelling of it (which spellings an
#: engine takes is the engine's own list, Engine.kv_cache_dtypes).  ``auto`` is resolved to the
#: model's own dtype (see :func:`kv_dtype_bytes`).  llama.cpp's block-quantized types carry a
#: scale per block of 32 (ggml's block sizes): q8_0 34 bytes, q4_0 and iq4_nl 18, q4_1 20,
#: q5_0 22, q5_1 24 per 32 elements.
KV_DTYPE_BYTES: dict[str, float] = {
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "fp16": 2,
    "f16": 2,
    "half": 2,
    "float32": 4,
    "fp32": 4,
    "f32": 4,
    "float": 4,
    "q8_0": 34 / 32,
    "q5_1": 24 / 32,
    "q5_0": 22 / 32,
    "q4_1": 20 / 32,
    "q4_0": 18 / 32,
    "iq4_nl": 18 / 32,
}

#: Bytes per element of a ``torch_dtype`` / ``dtype`` string in a config.  FP8 / NVFP4
#: checkpoints still declare their activation dtype here (``bfloat16``), which is what
#: ``--kv-cache-dtype auto`` uses.
MODEL_DTYPE_BYTES: dict[str, int] = {
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "float32": 4,
    "float": 4,
}

#: When a config names no dtype at all, assume bf16: every model this project serves
#: (and nearly every modern checkpoint) runs its activations, hence its KV, in bf16.
DEFAULT_MODEL_DTYPE_BYTES = 2

_NESTED_TEXT_KEYS = ("text_config", "llm_config", "language_config")


def kv_dtype_bytes(kv_cache_dtype: str, model_dtype_bytes: int = DEFAULT_MODEL_DTYPE_BYTES) -> float:
    """Bytes per KV element for an engine's ``--kv-cache-dtype`` value.

    ``auto`` (the engines' default) means "the model dtype": 2 bytes for bf16 models.
    """
    key = str(kv_cache_dtype).strip().lower()
    if key == "auto":
        return model_dtype_bytes
    try:
        return KV_DTYPE_BYTES[key]
    except KeyError:
        known = ", ".join(["auto", *sorted(KV_DTYPE_BYTES)])
        raise ValueError(f"unknown kv cache dtype {kv_cache_dtype!r}; expected one of: {known}") from None


# --------------------------------------------------------------------------- weight size


def weight_bytes_from_index(index_json: Mapping[str, Any]) -> int:
    """Total weight bytes from a parsed ``model.safetensors.index.json``.

    Uses ``metadata.total_size`` (the sum of the tensors' byte sizes, written by
    ``save_pretrained`` / ModelOpt / llm-compressor).  It is a few KB to MB smaller than the
    files on disk (the files also hold JSON headers), which is noise at this scale.
    """
    metadata = index_json.get("metadata") if isinstance(index_json, Mapping) else None
    if not isinstance(metadata, Mapping) or "total_size" not in metadata:
        raise ValueError(
            "model.safetensors.index.json has no metadata.total_size; "
            "pass the weight size in bytes, or sum the *.safetensors files (safetensors_dir_bytes)"
        )
    raw = metadata["total_size"]
    try:
        total = int(raw)
    except (TypeError, ValueError):
        raise ValueError(f"metadata.total_size is not an integer: {raw!r}") from None
    if isinstance(raw, float) and raw != total:
        raise ValueError(f"metadata.total_size is not an integer: {raw!r}")
    if total <= 0:
        raise ValueError(f"metadata.total_size must be positive, got {total}")
    return total


def safetensors_dir_bytes(directory: str | os.PathLike[str], *, recursive: bool = False) -> int:
    """Sum of the sizes of the ``*.safetensors`` files in a local directory.

    Symlinks are followed: a Hugging Face cache snapshot directory holds symlinks into
    ``blobs/``, and the blob's size is what counts.  ``recursive`` also descends into
    subdirectories (some repos keep weights in a subfolder).
    """
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"not a directory: {root}")
    pattern = "**/*.safetensors" if recursive else "*.safetensors"
    files = [p for p in root.glob(pattern) if p.is_file()]
    if not files:
        raise FileNotFoundError(f"no {pattern} files in {root}")
    return sum(p.stat().st_size for p in files)


# --------------------------------------------------------------------------- model facts


class ModelFacts(BaseModel):
    """What the fit check needs to know about a model (whole model, before sharding)."""

    model_config = ConfigDict(frozen=True)

    architecture: str | None = None
    model_type: str | None = None
    weight_bytes: int = Field(gt=0, description="sum of the checkpoint's tensor bytes")
    num_hidden_layers: int = Field(gt=0)
    kv_layers: int = Field(ge=0, description="decoder layers whose KV cache grows with the sequence")
    linear_layers: int = Field(ge=0, description="linear-attention (Gated DeltaNet) layers: fixed state")
    sliding_layers: int = Field(
        default=0, ge=0, description="sliding-window attention layers: their KV is capped at the window"
    )
    sliding_window: int | None = Field(default=None, gt=0, description="their window in tokens")
    num_kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    dtype_bytes: int = Field(default=DEFAULT_MODEL_DTYPE_BYTES, gt=0, description="model (activation) dtype")
    mla_latent_dim: int | None = Field(
        default=None, description="kv_lora_rank + qk_rope_head_dim for MLA models, else None"
    )
    linear_state_bytes_per_layer: int = Field(
        default=0,
        ge=0,
        description="recurrent + conv state of one linear-attention layer for one sequence, unsharded",
    )
    max_position_embeddings: int | None = None

    # -- KV ----------------------------------------------------------------------------

    def kv_heads_per_gpu(self, tensor_parallel_size: int = 1) -> int:
        """KV heads one tensor-parallel rank holds.

        Heads are split across ranks; when there are fewer KV heads than ranks the engines
        replicate them, so each rank still holds one (Qwen3.5 has 2 KV heads: TP=4 keeps 1
        per GPU, not 0.5).
        """
        return max(1, math.ceil(self.num_kv_heads / tensor_parallel_size))

    def kv_layers_per_gpu(self, pipeline_parallel_size: int = 1) -> int:
        """KV layers of the fullest pipeline stage (layers split as evenly as possible)."""
        return math.ceil(self.kv_layers / pipeline_parallel_size)

    def linear_layers_per_gpu(self, pipeline_parallel_size: int = 1) -> int:
        return math.ceil(self.linear_layers / pipeline_parallel_size)

    def kv_bytes_per_token(
        self,
        kv_cache_dtype: str = "auto",
        tensor_parallel_size: int = 1,
        pipeline_parallel_size: int = 1,
    ) -> int:
        """KV cache bytes one token costs on one GPU of the layout (K and V, all its layers).

        With the defaults (TP=PP=1) this is the whole model's KV per token.
        """
        elem = kv_dtype_bytes(kv_cache_dtype, self.dtype_bytes)
        layers = self.kv_layers_per_gpu(pipeline_parallel_size)
        if self.mla_latent_dim is not None:
            # One latent vector per token and layer, replicated on every TP rank.
            return math.ceil(layers * self.mla_latent_dim * elem)
        return math.ceil(layers * 2 * self.kv_heads_per_gpu(tensor_parallel_size) * self.head_dim * elem)

    def sliding_kv_bytes_per_seq(
        self, kv_cache_dtype: str = "auto", tensor_parallel_size: int = 1, pipeline_parallel_size: int = 1
    ) -> int:
        """KV of the sliding-window layers for one sequence on one GPU: at most the window's tokens
        (vLLM's hybrid KV cache manager, SGLang's SWA pool and llama.cpp's iSWA cache keep no more)."""
        if not self.sliding_layers or not self.sliding_window:
            return 0
        layers = math.ceil(self.sliding_layers / pipeline_parallel_size)
        elem = kv_dtype_bytes(kv_cache_dtype, self.dtype_bytes)
        per_token = layers * 2 * self.kv_heads_per_gpu(tensor_parallel_size) * self.head_dim * elem
        return math.ceil(per_token * self.sliding_window)

    def linear_state_bytes_per_seq(
        self, tensor_parallel_size: int = 1, pipeline_parallel_size: int = 1
    ) -> int:
        """Fixed linear-attention state of one sequence on one GPU (heads split across TP)."""
        if not self.linear_layers or not self.linear_state_bytes_per_layer:
            return 0
        per_layer = math.ceil(self.linear_state_bytes_per_layer / tensor_parallel_size)
        return self.linear_layers_per_gpu(pipeline_parallel_size) * per_layer


def _decoder_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The decoder's fields: the nested text config over the top level."""
    merged: dict[str, Any] = dict(config)
    for key in _NESTED_TEXT_KEYS:
        nested = config.get(key)
        if isinstance(nested, Mapping):
            merged.update(nested)
            break
    return merged


def _first(cfg: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            return value
    return None


def _dtype_bytes(cfg: Mapping[str, Any], top: Mapping[str, Any]) -> int:
    for source in (cfg, top):
        for key in ("torch_dtype", "dtype"):
            value = source.get(key)
            if isinstance(value, str) and value.lower() in MODEL_DTYPE_BYTES:
                return MODEL_DTYPE_BYTES[value.lower()]
    return DEFAULT_MODEL_DTYPE_BYTES


def _layer_split(cfg: Mapping[str, Any], num_layers: int) -> tuple[int, int, int]:
    """(kv_layers, linear_layers, sliding_layers) from ``layer_types`` or ``full_attention_interval``:
    kv_layers are those whose KV grows with the sequence."""
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        if len(layer_types) != num_layers:
            raise ValueError(
                f"config layer_types has {len(layer_types)} entries but num_hidden_layers is {num_layers}"
            )
        kinds = [str(t).lower() for t in layer_types]
        linear = sum(1 for t in kinds if "linear" in t or t in ("mamba", "gdn", "deltanet"))
        # Everything else is some attention with a KV cache ("full_attention", "attention",
        # "sliding_attention").  Sliding-window layers keep at most the window (gpt-oss: 128
        # tokens): apart, when the config gives the window; else counted in full (conservative).
        window = cfg.get("sliding_window")
        sliding = sum(1 for t in kinds if "sliding" in t) if isinstance(window, int) and window > 0 else 0
        return num_layers - linear - sliding, linear, sliding
    interval = cfg.get("full_attention_interval")
    if isinstance(interval, int) and interval > 0:
        full = sum(1 for i in range(num_layers) if (i + 1) % interval == 0)
        return full, num_layers - full, 0
    return num_layers, 0, 0


def _linear_state_bytes_per_layer(cfg: Mapping[str, Any], dtype_bytes: int) -> int:
    """Gated DeltaNet state of one layer and one sequence (recurrent matrix + conv window).

    recurrent: value_heads x key_head_dim x value_head_dim, in ``mamba_ssm_dtype``
    (Qwen3.5 configs say float32) or the model dtype; conv: (kernel - 1) x conv channels
    (2 x key_heads x key_head_dim + value_heads x value_head_dim) in the model dtype.
    Returns 0 when the config lacks the linear-attention fields.
    """
    nv = cfg.get("linear_num_value_heads")
    nk = cfg.get("linear_num_key_heads")
    dk = cfg.get("linear_key_head_dim")
    dv = cfg.get("linear_value_head_dim")
    if not all(isinstance(x, int) and x > 0 for x in (nv, nk, dk, dv)):
        return 0
    ssm_dtype = cfg.get("mamba_ssm_dtype")
    ssm_bytes = MODEL_DTYPE_BYTES.get(str(ssm_dtype).lower(), dtype_bytes) if ssm_dtype else dtype_bytes
    kernel = cfg.get("linear_conv_kernel_dim") or 4
    recurrent = nv * dk * dv * ssm_bytes
    conv = max(0, int(kernel) - 1) * (2 * nk * dk + nv * dv) * dtype_bytes
    return recurrent + conv


def model_facts_from_config(
    config: Mapping[str, Any],
    *,
    weight_bytes: int | None = None,
    index_json: Mapping[str, Any] | None = None,
) -> ModelFacts:
    """Derive :class:`ModelFacts` from a parsed ``config.json``.

    The weight size comes from ``weight_bytes`` when given, else from ``index_json``'s
    ``metadata.total_size`` (:func:`weight_bytes_from_index`).
    """
    if weight_bytes is None:
        if index_json is None:
            raise ValueError("give weight_bytes or the model.safetensors.index.json (index_json)")
        weight_bytes = weight_bytes_from_index(index_json)

    cfg = _decoder_config(config)
    num_layers = _first(cfg, "num_hidden_layers", "n_layer", "num_layers")
    if not isinstance(num_layers, int) or num_layers <= 0:
        raise ValueError("config has no num_hidden_layers (looked at top level and text_config)")
    num_heads = _first(cfg, "num_attention_heads", "n_head")
    num_kv_heads = _first(cfg, "num_key_value_heads", "num_kv_heads") or num_heads
    if not isinstance(num_kv_heads, int) or num_kv_heads <= 0:
        raise ValueError("config has neither num_key_value_heads nor num_attention_heads")
    head_dim = cfg.get("head_dim")
    if not isinstance(head_dim, int) or head_dim <= 0:
        hidden = _first(cfg, "hidden_size", "n_embd")
        if not isinstance(hidden, int) or not isinstance(num_heads, int) or num_heads <= 0:
            raise ValueError("config has no head_dim and no hidden_size / num_attention_heads to derive it")
        head_dim = hidden // num_heads

    dtype_bytes = _dtype_bytes(cfg, config)
    kv_layers, linear_layers, sliding_layers = _layer_split(cfg, num_layers)

    mla_latent_dim = None
    if isinstance(cfg.get("kv_lora_rank"), int):
        mla_latent_dim = cfg["kv_lora_rank"] + int(cfg.get("qk_rope_head_dim") or 0)

    architectures = config.get("architectures") or cfg.get("architectures") or [None]
    return ModelFacts(
        architecture=architectures[0],
        model_type=cfg.get("model_type") or config.get("model_type"),
        weight_bytes=int(weight_bytes),
        num_hidden_layers=num_layers,
        kv_layers=kv_layers,
        linear_layers=linear_layers,
        sliding_layers=sliding_layers,
        sliding_window=cfg.get("sliding_window") if sliding_layers else None,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        dtype_bytes=dtype_bytes,
        mla_latent_dim=mla_latent_dim,
        linear_state_bytes_per_layer=_linear_state_bytes_per_layer(cfg, dtype_bytes) if linear_layers else 0,
        max_position_embeddings=cfg.get("max_position_embeddings"),
    )
