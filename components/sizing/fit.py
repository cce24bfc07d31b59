"""Memory fit: will the model's weights plus its KV cache fit the GPUs of a layout?

Per GPU the engine needs::

    weights / (TP x PP)                      even sharding assumed (see below)
  + KV cache for max_model_len x max_num_seqs  the GPU's KV heads and its stage's layers
  + fixed state x max_num_seqs              hybrid models only: linear-attention state, and the
                                             KV of sliding-window layers (capped at the window)
  + runtime overhead                         CUDA context, NCCL, activations, graphs

and it may use ``usable memory x memory fraction`` (vLLM ``--gpu-memory-utilization``,
SGLang ``--mem-fraction-static``): both engines size everything they allocate, weights
included, against that fraction of the device's memory.

This is a floor, meant to stop a layout that cannot work before anything changes on the
machines; passing it does not promise the engine will accept any concurrency.

Even sharding is an approximation: norms, routers and (for VL models) the vision tower
are replicated rather than split, so the real first rank carries slightly more.  They
are under 1-2 % of these MoE checkpoints and the overhead allowance absorbs them.
"""

from __future__ import annotations

import math
from typing import Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from components.sizing.model_facts import GB, GiB, ModelFacts, kv_dtype_bytes

#: DGX Spark (GB10): 128 GB LPDDR5X unified between the Grace CPU and the GPU.  The
#: device reports ~121.7 GiB; the OS, page cache and every CPU process share it, so we
#: count 120 GB usable (the design brief's figure).  Configurable per node.
GB10_USABLE_BYTES_PER_GPU = 120 * GB

#: RTX PRO 6000 Blackwell: 96 GB GDDR7 per GPU (the driver reports 97,887 MiB, ~102.6 GB;
#: we count the marketed 96 GB, leaving the difference as margin).  Configurable.
RTX_PRO_6000_USABLE_BYTES_PER_GPU = 96 * GB

#: Runtime overhead per GPU outside weights and KV, when nothing better is known.
#: Rough budget on these engines (vLLM / SGLang, CUDA 12-13, Blackwell):
#:   CUDA context + cuBLAS/cuDNN/FlashInfer workspaces   ~0.8-1.5 GiB
#:   NCCL buffers (TP/PP communicators)                  ~0.3-1   GiB
#:   CUDA graphs for the decode batch sizes              ~0.5-2   GiB
#:   activation peak of a prefill chunk (8k tokens), MoE routing buffers, logits over a
#:   ~250k vocabulary, sampler                           ~1-2     GiB
#: -> 5 GiB (5.4 GB).  Raise it for large --max-num-batched-tokens or many CUDA graphs.
DEFAULT_OVERHEAD_BYTES_PER_GPU = 5 * GiB

#: Default engine memory fraction.  Well under 0.9 on purpose: on unified memory (GB10)
#: the rest of the system lives in the same pool.  Public DGX Spark recipes use 0.8.
DEFAULT_MEMORY_FRACTION = 0.80

#: Advice threshold: fractions above this leave too little for the OS on a GB10 and for
#: fragmentation anywhere; we suggest raising the fraction only up to it.
MAX_RECOMMENDED_MEMORY_FRACTION = 0.90

#: Largest TP x PP the "raise TP / add a node" advice searches.
_MAX_WORLD_SIZE_ADVICE = 64


def _gb(n: float) -> str:
    """Bytes as decimal GB with one decimal: the unit operators read on spec sheets."""
    return f"{n / GB:.1f} GB"


class NodeSpec(BaseModel):
    """One machine of the layout: how many GPUs it has, how much each may hold."""

    model_config = ConfigDict(frozen=True)

    name: str
    gpu_count: int = Field(default=1, gt=0)
    usable_bytes_per_gpu: int = Field(gt=0)
    gpus_used: int | None = Field(
        default=None, gt=0, description="GPUs of this node the deployment uses; all of them when None"
    )

    @model_validator(mode="after")
    def _used_within_count(self) -> "NodeSpec":
        if self.gpus_used is not None and self.gpus_used > self.gpu_count:
            raise ValueError(f"node {self.name}: gpus_used {self.gpus_used} > gpu_count {self.gpu_count}")
        return self

    @property
    def used(self) -> int:
        return self.gpus_used if self.gpus_used is not None else self.gpu_count

    @classmethod
    def dgx_spark(cls, name: str, usable_bytes_per_gpu: int = GB10_USABLE_BYTES_PER_GPU) -> "NodeSpec":
        """A DGX Spark: one GB10 GPU on unified memory."""
        return cls(name=name, gpu_count=1, usable_bytes_per_gpu=usable_bytes_per_gpu)

    @classmethod
    def rtx_pro_6000(
        cls,
        name: str,
        gpu_count: int = 4,
        usable_bytes_per_gpu: int = RTX_PRO_6000_USABLE_BYTES_PER_GPU,
        gpus_used: int | None = None,
    ) -> "NodeSpec":
        """An RTX PRO 6000 Blackwell workstation (4 GPUs by default)."""
        return cls(name=name, gpu_count=gpu_count, usable_bytes_per_gpu=usable_bytes_per_gpu, gpus_used=gpus_used)


class Layout(BaseModel):
    """How the model is spread: TP x PP ranks over the GPUs of the nodes, in order."""

    model_config = ConfigDict(frozen=True)

    tensor_parallel_size: int = Field(default=1, gt=0)
    pipeline_parallel_size: int = Field(default=1, gt=0)
    nodes: tuple[NodeSpec, ...]

    @field_validator("nodes")
    @classmethod
    def _some_nodes(cls, nodes: tuple[NodeSpec, ...]) -> tuple[NodeSpec, ...]:
        if not nodes:
            raise ValueError("a layout needs at least one node")
        names = [n.name for n in nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"node names repeat: {names}")
        return nodes

    @model_validator(mode="after")
    def _world_matches_gpus(self) -> "Layout":
        world = self.world_size
        gpus = sum(n.used for n in self.nodes)
        if world != gpus:
            raise ValueError(
                f"tensor_parallel_size x pipeline_parallel_size = {world} but the nodes give {gpus} GPU(s) "
                f"({', '.join(f'{n.name}: {n.used}' for n in self.nodes)}); "
                "make them equal (set gpus_used on a node to use only part of it)"
            )
        return self

    @property
    def world_size(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size


class GpuFit(BaseModel):
    """The arithmetic for one GPU."""

    model_config = ConfigDict(frozen=True)

    node: str
    gpu_index: int
    weight_bytes: int
    kv_bytes: int
    fixed_state_bytes: int   # per sequence × max_num_seqs: linear-attention state, sliding-window KV
    overhead_bytes: int
    needed_bytes: int
    usable_bytes: int
    budget_bytes: int
    fits: bool

    @property
    def headroom_bytes(self) -> int:
        """Budget minus need: negative when it does not fit."""
        return self.budget_bytes - self.needed_bytes

    def line(self, memory_fraction: float) -> str:
        verdict = "fits" if self.fits else f"SHORT by {_gb(-self.headroom_bytes)}"
        state = f" + fixed state per sequence {_gb(self.fixed_state_bytes)}" if self.fixed_state_bytes else ""
        return (
            f"{self.node}/gpu{self.gpu_index}: weights {_gb(self.weight_bytes)} + KV {_gb(self.kv_bytes)}"
            f"{state} + overhead {_gb(self.overhead_bytes)} = {_gb(self.needed_bytes)} "
            f"of {_gb(self.budget_bytes)} ({_gb(self.usable_bytes)} x {memory_fraction:.2f}): {verdict}"
        )


class FitReport(BaseModel):
    """Result of :func:`check_fit`: one :class:`GpuFit` per GPU, the verdict, and advice."""

    model_config = ConfigDict(frozen=True)

    fits: bool
    gpus: tuple[GpuFit, ...]
    tensor_parallel_size: int
    pipeline_parallel_size: int
    max_model_len: int
    max_num_seqs: int
    kv_cache_dtype: str
    memory_fraction: float
    kv_bytes_per_token_per_gpu: int
    max_model_len_that_fits: int | None = Field(
        description="longest max_model_len every GPU can hold at this layout and concurrency; None if none"
    )
    kv_tokens_in_budget: int = Field(
        0, description="tokens of KV cache the tightest GPU's budget holds after weights, state and overhead"
    )
    remedies: tuple[str, ...] = ()
    message: str

    @property
    def worst(self) -> GpuFit:
        """The GPU with the least headroom."""
        return min(self.gpus, key=lambda g: g.headroom_bytes)

    def summary_lines(self) -> list[str]:
        return [g.line(self.memory_fraction) for g in self.gpus]

    def raise_if_unfit(self) -> "FitReport":
        if not self.fits:
            raise ModelDoesNotFitError(self)
        return self


class ModelDoesNotFitError(ValueError):
    """Raised by :meth:`FitReport.raise_if_unfit`; carries the report."""

    def __init__(self, report: FitReport):
        super().__init__(report.message)
        self.report = report


# --------------------------------------------------------------------------- the check


def _per_gpu_need(
    facts: ModelFacts,
    tp: int,
    pp: int,
    max_model_len: int,
    max_num_seqs: int,
    kv_cache_dtype: str,
    overhead: int,
) -> tuple[int, int, int, int]:
    """(weights, kv, linear state, total) bytes one GPU needs."""
    weights = math.ceil(facts.weight_bytes / (tp * pp))
    kv = facts.kv_bytes_per_token(kv_cache_dtype, tp, pp) * max_model_len * max_num_seqs
    state = (facts.linear_state_bytes_per_seq(tp, pp) + facts.sliding_kv_bytes_per_seq(kv_cache_dtype, tp, pp)) \
        * max_num_seqs
    return weights, kv, state, weights + kv + state + overhead


def check_fit(
    facts: ModelFacts,
    layout: Layout,
    *,
    max_model_len: int,
    max_num_seqs: int = 1,
    kv_cache_dtype: str = "auto",
    memory_fraction: float = DEFAULT_MEMORY_FRACTION,
    overhead_bytes_per_gpu: int = DEFAULT_OVERHEAD_BYTES_PER_GPU,
    smaller_kv_dtype: str | None = "fp8",
    fraction_flag: str | None = "--gpu-memory-utilization / --mem-fraction-static",
) -> FitReport:
    """Check that ``facts`` fits ``layout`` at ``max_model_len``.

    Parameters
    ----------
    facts:
        From :func:`~components.sizing.model_facts.model_facts_from_config`.
    layout:
        TP, PP and the nodes whose GPUs the ranks occupy.
    max_model_len:
        The engine's ``--max-model-len`` / ``--context-length``.
    max_num_seqs:
        Concurrent sequences whose full-length KV must fit together.  Default 1: the
        floor below which the deployment cannot serve a single full-length request.
    kv_cache_dtype:
        ``auto`` (model dtype, bf16 -> 2 bytes) or ``fp8`` / ``fp8_e4m3`` / ``fp8_e5m2`` (1 byte).
    memory_fraction:
        ``--gpu-memory-utilization`` (vLLM) / ``--mem-fraction-static`` (SGLang).
    overhead_bytes_per_gpu:
        Fixed runtime overhead per GPU; see :data:`DEFAULT_OVERHEAD_BYTES_PER_GPU`.
    smaller_kv_dtype:
        The engine's own spelling of a cheaper KV dtype the advice may offer (Engine.smaller_kv_dtype).
    fraction_flag:
        The engine's flag for ``memory_fraction`` in the advice; None: it takes no share (llama.cpp),
        and ``memory_fraction`` is 1.0, all of the usable memory.
    """
    if max_model_len <= 0:
        raise ValueError(f"max_model_len must be positive, got {max_model_len}")
    if max_num_seqs <= 0:
        raise ValueError(f"max_num_seqs must be positive, got {max_num_seqs}")
    if not 0.0 < memory_fraction <= 1.0:
        raise ValueError(f"memory_fraction must be in (0, 1], got {memory_fraction}")
    if overhead_bytes_per_gpu < 0:
        raise ValueError(f"overhead_bytes_per_gpu must be >= 0, got {overhead_bytes_per_gpu}")
    kv_dtype_bytes(kv_cache_dtype, facts.dtype_bytes)  # validate the spelling early

    tp, pp = layout.tensor_parallel_size, layout.pipeline_parallel_size
    weights, kv, state, needed = _per_gpu_need(
        facts, tp, pp, max_model_len, max_num_seqs, kv_cache_dtype, overhead_bytes_per_gpu
    )

    gpus: list[GpuFit] = []
    for node in layout.nodes:
        budget = int(node.usable_bytes_per_gpu * memory_fraction)
        for index in range(node.used):
            gpus.append(
                GpuFit(
                    node=node.name,
                    gpu_index=index,
                    weight_bytes=weights,
                    kv_bytes=kv,
                    fixed_state_bytes=state,
                    overhead_bytes=overhead_bytes_per_gpu,
                    needed_bytes=needed,
                    usable_bytes=node.usable_bytes_per_gpu,
                    budget_bytes=budget,
                    fits=needed <= budget,
                )
            )

    kv_per_token = facts.kv_bytes_per_token(kv_cache_dtype, tp, pp)
    min_budget = min(g.budget_bytes for g in gpus)
    room_for_kv = min_budget - weights - state - overhead_bytes_per_gpu
    longest = room_for_kv // (kv_per_token * max_num_seqs) if kv_per_token and room_for_kv > 0 else 0
    max_len_fits = int(longest) if longest >= 1 else None
    kv_tokens = room_for_kv // kv_per_token if kv_per_token and room_for_kv > 0 else 0

    fits = all(g.fits for g in gpus)
    common = dict(
        gpus=tuple(gpus),
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        kv_cache_dtype=kv_cache_dtype,
        memory_fraction=memory_fraction,
        kv_bytes_per_token_per_gpu=kv_per_token,
        max_model_len_that_fits=max_len_fits,
        kv_tokens_in_budget=int(kv_tokens),
    )
    if fits:
        worst = min(gpus, key=lambda g: g.headroom_bytes)
        message = (
            f"fits: every GPU needs {_gb(needed)} of at least {_gb(min_budget)} "
            f"(headroom {_gb(worst.headroom_bytes)} on {worst.node}/gpu{worst.gpu_index})"
        )
        return FitReport(fits=True, remedies=(), message=message, **common)

    remedies = _remedies(
        facts,
        layout,
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        kv_cache_dtype=kv_cache_dtype,
        memory_fraction=memory_fraction,
        overhead=overhead_bytes_per_gpu,
        weights=weights,
        kv=kv,
        state=state,
        needed=needed,
        min_budget=min_budget,
        max_len_fits=max_len_fits,
        smaller_kv_dtype=smaller_kv_dtype,
        fraction_flag=fraction_flag,
    )
    worst = min(gpus, key=lambda g: g.headroom_bytes)
    head = (
        f"model does not fit: {worst.node}/gpu{worst.gpu_index} needs {_gb(needed)} "
        f"(weights {_gb(weights)} + KV {_gb(kv)} for {max_model_len} tokens x {max_num_seqs} seq"
        + (f" + fixed state per sequence {_gb(state)}" if state else "")
        + f" + overhead {_gb(overhead_bytes_per_gpu)}) but its budget is {_gb(worst.budget_bytes)} "
        f"({_gb(worst.usable_bytes)} usable x {memory_fraction:.2f}); short by {_gb(-worst.headroom_bytes)}."
    )
    message = head + "\nWays out:\n" + "\n".join(f"  - {r}" for r in remedies)
    return FitReport(fits=False, remedies=tuple(remedies), message=message, **common)


def _remedies(
    facts: ModelFacts,
    layout: Layout,
    *,
    max_model_len: int,
    max_num_seqs: int,
    kv_cache_dtype: str,
    memory_fraction: float,
    overhead: int,
    weights: int,
    kv: int,
    state: int,
    needed: int,
    min_budget: int,
    max_len_fits: int | None,
    smaller_kv_dtype: str | None,
    fraction_flag: str | None,
) -> list[str]:
    """Every way out that applies, each with the number it would give."""
    tp, pp = layout.tensor_parallel_size, layout.pipeline_parallel_size
    world = tp * pp
    min_usable = min(n.usable_bytes_per_gpu for n in layout.nodes)
    out: list[str] = []

    # 1. More GPUs: the smallest world size (TP x PP) that fits GPUs like these.  TP is
    #    kept a power of two (it must divide the attention heads); PP is tried too, since
    #    KV heads stop shrinking once TP exceeds them while PP keeps splitting KV layers.
    best = _smallest_fitting_split(
        facts, layout, max_model_len, max_num_seqs, kv_cache_dtype, overhead, min_budget
    )
    if best is not None:
        new_tp, new_pp, need = best
        extra = new_tp * new_pp - world
        if all(n.gpu_count == 1 for n in layout.nodes):
            more = f"{extra} more node{'s' if extra > 1 else ''} like these"
        else:
            more = f"{extra} more GPU{'s' if extra > 1 else ''} of this size"
        out.append(
            f"raise TP (tensor-parallel size) / add a node: TP={new_tp}"
            + (f" x PP={new_pp}" if new_pp > 1 else "")
            + f" over {new_tp * new_pp} GPUs ({more}) needs {_gb(need)} per GPU of {_gb(min_budget)}"
        )
    else:
        out.append(
            f"raise TP / add a node: even {_MAX_WORLD_SIZE_ADVICE} GPUs of {_gb(min_usable)} at "
            f"fraction {memory_fraction:.2f} would not hold it"
        )

    # 2. Shorter context.
    if max_len_fits is not None and max_len_fits < max_model_len:
        out.append(
            f"shorten max length: --max-model-len {max_len_fits} or less fits "
            f"(now {max_model_len}; KV costs {_gb(kv / max_model_len * 100_000)} per 100k tokens per GPU"
            + (f" at {max_num_seqs} sequences" if max_num_seqs > 1 else "")
            + ")"
        )
    elif max_len_fits is None:
        out.append(
            "shorten max length: no help here, the weights and overhead alone "
            f"({_gb(weights + state + overhead)}) exceed the {_gb(min_budget)} budget"
        )

    # 3. A smaller KV dtype, in the engine's own spelling.
    small = smaller_kv_dtype
    if small and kv and kv_dtype_bytes(small, facts.dtype_bytes) < kv_dtype_bytes(kv_cache_dtype, facts.dtype_bytes):
        *_, need_small = _per_gpu_need(facts, tp, pp, max_model_len, max_num_seqs, small, overhead)
        kv_small = facts.kv_bytes_per_token(small, tp, pp) * max_model_len * max_num_seqs
        verdict = "fits" if need_small <= min_budget else f"still short by {_gb(need_small - min_budget)}"
        out.append(
            f"{small} KV cache (kv_cache_dtype: {small}): KV {_gb(kv)} -> {_gb(kv_small)} per GPU, "
            f"total {_gb(need_small)} ({verdict})"
        )

    # 4. Fewer concurrent full-length sequences.
    if max_num_seqs > 1:
        per_seq = (kv + state) // max_num_seqs
        room = min_budget - weights - overhead
        seqs = room // per_seq if per_seq and room > 0 else 0
        if seqs >= 1:
            out.append(f"fewer concurrent sequences: max_num_seqs {int(seqs)} or less fits (now {max_num_seqs})")

    # 5. Smaller quantization: the largest checkpoint this layout holds.
    room_for_weights = (min_budget - kv - state - overhead) * world
    if room_for_weights > 0:
        out.append(
            f"a smaller quantization: weights of at most {_gb(room_for_weights)} in total fit this layout "
            f"(now {_gb(facts.weight_bytes)}): a lower-bit checkpoint, e.g. BF16 -> FP8 -> NVFP4/INT4"
        )
    else:
        out.append(
            "a smaller quantization: no help alone, KV and overhead already exceed the budget; "
            "combine with a shorter max length or fp8 KV"
        )

    # 6. Higher memory fraction, only up to the recommended ceiling (engines that take one).
    if fraction_flag and memory_fraction < MAX_RECOMMENDED_MEMORY_FRACTION:
        required = needed / min_usable
        if required <= MAX_RECOMMENDED_MEMORY_FRACTION:
            out.append(
                f"raise the memory fraction ({fraction_flag}) "
                f"from {memory_fraction:.2f} to {math.ceil(required * 100) / 100:.2f}"
            )
        else:
            short = needed - int(min_usable * MAX_RECOMMENDED_MEMORY_FRACTION)
            out.append(
                f"raise the memory fraction: not enough alone, at {MAX_RECOMMENDED_MEMORY_FRACTION:.2f} "
                f"it is still short by {_gb(short)}"
            )
    return out


def _smallest_fitting_split(
    facts: ModelFacts,
    layout: Layout,
    max_model_len: int,
    max_num_seqs: int,
    kv_cache_dtype: str,
    overhead: int,
    budget: int,
) -> tuple[int, int, int] | None:
    """(tp, pp, need per GPU) of the smallest larger world size that fits.

    Multi-GPU boxes grow by whole boxes (world sizes that are multiples of the largest
    box); single-GPU nodes (Sparks) one node at a time.  Within a size, the largest TP
    that fits wins (no pipeline bubbles); TP stays a power of two so it divides the heads.
    """
    step = max(n.gpu_count for n in layout.nodes)
    world = layout.world_size
    first = (world // step + 1) * step
    for size in range(first, _MAX_WORLD_SIZE_ADVICE + 1, step):
        fitting = []
        tp = 1
        while tp <= size:
            if size % tp == 0 and size // tp <= facts.num_hidden_layers:
                pp = size // tp
                *_, need = _per_gpu_need(facts, tp, pp, max_model_len, max_num_seqs, kv_cache_dtype, overhead)
                if need <= budget:
                    fitting.append((tp, pp, need))
            tp *= 2
        if fitting:
            return max(fitting)
    return None

__all__: Sequence[str] = (
    "DEFAULT_MEMORY_FRACTION",
    "DEFAULT_OVERHEAD_BYTES_PER_GPU",
    "FitReport",
    "GB10_USABLE_BYTES_PER_GPU",
    "GpuFit",
    "Layout",
    "MAX_RECOMMENDED_MEMORY_FRACTION",
    "ModelDoesNotFitError",
    "NodeSpec",
    "RTX_PRO_6000_USABLE_BYTES_PER_GPU",
    "check_fit",
)
