"""What each engine's /metrics gives Prometheus, written from the engines' code (the files
components/monitoring/series.py cites), never from series.py: a wrong name there fails the tests.

Each table holds, per role, the engine's series (name and its own labels) with a per-minute
increase (counters) or a value (gauges), chosen so that every engine must give the same recorded
values (EXPECTED) and so that a wrong aggregation shows: two vLLM engine indexes to sum, SGLang's
per-priority gauges beside their total (priority="") and its data-parallel KV pools, where the
fullest counts. Engines without a histogram have None."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from components.config import load_stack_file
from components.config.schema import StackSpec
from components.monitoring.series import matchers
from components.operator.metrics import file_sd

REPO = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Exposition:
    engine: str
    stack: str                  # a shipped stack with a deployment of this engine
    deployment: str
    decode: dict[str, float]    # counters of generated tokens, per minute
    progress: dict[str, float]  # the counters the engine's progress is read from, per minute
    running: dict[str, float]
    waiting: dict[str, float]
    kv_cache: dict[str, float]
    preemptions: dict[str, float]   # per minute
    ttft: tuple[str, str] | None    # histogram name, its series' labels
    itl: tuple[str, str] | None

    def counters(self) -> dict[str, float]:
        return {**self.decode, **self.progress, **self.preemptions}

    def gauges(self) -> dict[str, float]:
        return {**self.running, **self.waiting, **self.kv_cache}


# The recorded values every table gives at minute 10 of a steady run.
EXPECTED = {
    "bws:decode_tokens_per_second": 15.0,          # 900 per minute
    "bws:progress_per_second": 35.0,               # 2100 per minute
    "bws:requests_running": 5.0,
    "bws:requests_waiting": 1.0,
    "bws:kv_cache_usage_ratio": 0.75,
    "bws:preemptions_per_second": 1.0,             # 60 per minute
    "bws:ttft_seconds:p95": 0.4875,                # every request in (0.25, 0.5]: 0.25 + 0.95 × 0.25
    "bws:inter_token_latency_seconds:p95": 0.04875,  # every token in (0.025, 0.05]
}
TTFT_BUCKETS = ("0.25", "0.5")
ITL_BUCKETS = ("0.025", "0.05")

# vLLM 0.32: labels model_name and engine (the engine index; Prometheus renames it exported_engine,
# as the target's own `engine` label wins).
_V0 = 'model_name="tiny-llama",exported_engine="0"'
_V1 = 'model_name="tiny-llama",exported_engine="1"'
VLLM = Exposition(
    engine="vllm", stack="lab", deployment="tiny",
    decode={f"vllm:generation_tokens_total{{{_V0}}}": 600, f"vllm:generation_tokens_total{{{_V1}}}": 300},
    progress={f"vllm:generation_tokens_total{{{_V0}}}": 600, f"vllm:generation_tokens_total{{{_V1}}}": 300,
              f"vllm:prompt_tokens_total{{{_V0}}}": 1200, f"vllm:prompt_tokens_total{{{_V1}}}": 0},
    running={f"vllm:num_requests_running{{{_V0}}}": 3, f"vllm:num_requests_running{{{_V1}}}": 2},
    waiting={f"vllm:num_requests_waiting{{{_V0}}}": 1, f"vllm:num_requests_waiting{{{_V1}}}": 0},
    kv_cache={f"vllm:kv_cache_usage_perc{{{_V0}}}": 0.5, f"vllm:kv_cache_usage_perc{{{_V1}}}": 0.75},
    preemptions={f"vllm:num_preemptions_total{{{_V0}}}": 60, f"vllm:num_preemptions_total{{{_V1}}}": 0},
    ttft=("vllm:time_to_first_token_seconds", _V0),
    itl=("vllm:inter_token_latency_seconds", _V0),
)

# SGLang 0.5.10rc0: the scheduler's labels (attention-TP rank 0 reports); realtime tokens by mode;
# with priority scheduling a gauge's total has priority="" and each priority its own series.
_S = 'model_name="qwen35",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0"'
SGLANG = Exposition(
    engine="sglang", stack="spark-duo-sglang", deployment="qwen35-sglang",
    decode={f'sglang:realtime_tokens_total{{{_S},mode="decode"}}': 900},
    progress={f'sglang:realtime_tokens_total{{{_S},mode="decode"}}': 900,
              f'sglang:realtime_tokens_total{{{_S},mode="prefill_compute"}}': 1000,
              f'sglang:realtime_tokens_total{{{_S},mode="prefill_cache"}}': 200},
    running={f'sglang:num_running_reqs{{{_S},priority=""}}': 5, f'sglang:num_running_reqs{{{_S},priority="1"}}': 3,
             f'sglang:num_running_reqs{{{_S},priority="2"}}': 2},
    waiting={f'sglang:num_queue_reqs{{{_S},priority=""}}': 1, f'sglang:num_queue_reqs{{{_S},priority="1"}}': 1},
    kv_cache={f'sglang:token_usage{{{_S},dp_rank="0"}}': 0.5, f'sglang:token_usage{{{_S},dp_rank="1"}}': 0.75},
    preemptions={f"sglang:num_retracted_requests_total{{{_S}}}": 60},
    ttft=("sglang:time_to_first_token_seconds", 'model_name="qwen35"'),
    itl=("sglang:inter_token_latency_seconds", 'model_name="qwen35"'),
)

# llama.cpp's llama-server --metrics: unlabelled series; tokens_predicted lands as requests end,
# n_decode_total grows at every llama_decode() call.
LLAMACPP = Exposition(
    engine="llamacpp", stack="lab", deployment="tiny-gguf",
    decode={"llamacpp:tokens_predicted_total": 900},
    progress={"llamacpp:n_decode_total": 2100},
    running={"llamacpp:requests_processing": 5},
    waiting={"llamacpp:requests_deferred": 1},
    kv_cache={}, preemptions={}, ttft=None, itl=None,
)

EXPOSITIONS = (VLLM, SGLANG, LLAMACPP)


def with_labels(series: str, labels: dict[str, str]) -> str:
    """`name{a="1"}` with `labels` (the scrape target's) added."""
    name, _, own = series.partition("{")
    return f"{name}{{{','.join(x for x in (own.rstrip('}'), matchers(**labels)) if x)}}}"


@cache
def spec(stack: str) -> StackSpec:
    return load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")


def target_labels(stack: str, deployment: str, rename: str | None = None) -> dict[str, str]:
    """What Prometheus adds to every series of a deployment's target: the file_sd labels of
    components/operator/metrics.py, the job and the instance (`rename`: another deployment's name)."""
    [group] = [g for g in file_sd(stack, spec(stack)) if g["labels"]["deployment"] == deployment]
    labels = {k: v for k, v in group["labels"].items() if not k.startswith("__")}
    return {"job": "blackwell-serving", "instance": group["targets"][0], **labels, "deployment": rename or deployment}
