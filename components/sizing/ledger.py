"""The memory ledger's prediction side: what the fit expects each deployment's engine to hold on
one GPU (one rank), in the terms the engines themselves report after they start (vLLM logs its
KV cache size in tokens and its maximum concurrency at max_model_len; llama.cpp its KV buffer
and cells): the weights, the KV bytes per token, the tokens its KV cache holds, the requests of
max_model_len tokens that fit at once, and the fixed overhead the fit allows.

Where the KV cache comes from depends on the engine (Engine.kv_tokens_allocated,
kv_bytes_allocated): llama.cpp allocates --ctx-size tokens; vLLM's CPU build the
VLLM_CPU_KVCACHE_SPACE it is given; otherwise vLLM and SGLang fill what their memory share leaves
after the weights and their own buffers (the fit's budget arithmetic).

The measurement side is the engine's own word, read by the health gate once the engine answers
(templates/scripts/_memory_ledger.sh.j2): its log line of the KV cache it allocated
(Engine.kv_report_marker, kv_report_pattern) and the memory its container or unit holds. The
stack output `memory_ledger` sets them side by side with the error of the KV prediction."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from components.engines import engine_of
from components.sizing.fit import FitReport
from components.sizing.model_facts import GB


@dataclass(frozen=True)
class Prediction:
    weights_bytes: int          # per GPU (rank)
    kv_bytes_per_token: int     # per GPU (rank): its KV heads of its stage's layers
    kv_tokens: int              # tokens the KV cache holds
    kv_sized_by: str            # what set kv_tokens, in the engine's terms
    max_concurrency: float      # kv_tokens / max_model_len: full-length requests at once
    overhead_bytes: int         # the fit's allowance per GPU for everything else

    def line(self, max_model_len: int) -> str:
        return (f"prediction per GPU: weights {self.weights_bytes / GB:.2f} GB, KV {self.kv_bytes_per_token:,} "
                f"bytes per token, KV cache {self.kv_tokens:,} tokens ({self.kv_sized_by}), "
                f"{self.max_concurrency:.2f} requests of {max_model_len:,} tokens at once, "
                f"overhead {self.overhead_bytes / GB:.1f} GB")

    def as_output(self) -> dict:
        return asdict(self)


def predict(d, report: FitReport) -> Prediction:
    """The prediction for deployment `d` from its fit report (components/sizing/stack_fit.py)."""
    engine = engine_of(d)
    per_token = report.kv_bytes_per_token_per_gpu
    tight = report.worst
    tokens, sized_by = engine.kv_tokens_allocated(d), "its context: --ctx-size"
    if tokens is None:
        kv_bytes = engine.kv_bytes_allocated(d)
        if kv_bytes is not None:
            tokens, sized_by = (kv_bytes // per_token if per_token else 0), f"{kv_bytes / 2**30:g} GiB set for it"
        else:
            tokens = report.kv_tokens_in_budget
            sized_by = f"what {engine.memory_fraction_flag} {d.memory_fraction:g} leaves"
    return Prediction(
        weights_bytes=tight.weight_bytes,
        kv_bytes_per_token=per_token,
        kv_tokens=int(tokens),
        kv_sized_by=sized_by,
        max_concurrency=round(tokens / d.max_model_len, 2),
        overhead_bytes=tight.overhead_bytes,
    )


# docker stats' MemUsage units (binary, as it prints them) and systemd's bytes.
_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
          "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_SIZE = re.compile(r"^\s*(?P<number>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[A-Za-z]+)\s*$")


def parse_size(text: str) -> int | None:
    match = _SIZE.match(text or "")
    if match is None or match["unit"] not in _UNITS:
        return None
    return int(float(match["number"]) * _UNITS[match["unit"]])


def measure(d, health_stdout: str | None) -> dict:
    """The engine's own figures from the health gate's output: kv_tokens (its log line, the last
    of this start), memory_bytes (its container or unit now); None where it said nothing."""
    engine = engine_of(d)
    tokens, memory = None, None
    for line in (health_stdout or "").splitlines():
        if line.startswith("kv-report="):
            reported = engine.kv_tokens_reported(line)
            if reported is not None:
                tokens = reported
        elif line.startswith("memory-usage="):
            memory = parse_size(line.split("=", 1)[1])
    return {"kv_tokens": tokens, "memory_bytes": memory}


def ledger_entry(d, prediction: Prediction | None, health_stdout: str | None) -> dict:
    """One deployment's line of the ledger: the prediction, the measurement, and the KV tokens'
    error (predicted / measured - 1, in percent) where both exist."""
    measured = measure(d, health_stdout)
    entry = {"predicted": prediction.as_output() if prediction else None, "measured": measured}
    if prediction and measured["kv_tokens"]:
        entry["kv_tokens_error_pct"] = round(100 * (prediction.kv_tokens / measured["kv_tokens"] - 1), 1)
    return entry
