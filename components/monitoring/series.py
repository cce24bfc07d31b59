"""The recorded series: one set of names for every engine, each made from that engine's own
metrics, so that a dashboard or an alert reads `bws:...` alone and how vLLM, SGLang and llama.cpp
name the same thing is said here once.

A deployment's series are labelled {stack, deployment}, a node's {stack, node}: the labels that
components/operator/metrics.py gives each engine target (and that a node_exporter target is to
carry), so the engines' own labels (vLLM's engine index, SGLang's ranks, the served model) are
summed away. An engine that exports nothing for a name has no entry for it, and that name is not
recorded for its deployments.

What each engine exports, read in its code:
- vLLM 0.32 (vllm/v1/metrics/loggers.py): prometheus_client counters, exposed with `_total`; the
  per-token latency is vllm:inter_token_latency_seconds (vllm:time_per_output_token_seconds is
  gone; vllm:request_time_per_output_token_seconds is one value per request). Its own `engine`
  label (the engine index) reaches Prometheus as `exported_engine`, the target's label winning.
- SGLang 0.5.10rc0 (sglang/srt/observability/metrics_collector.py, scheduler_metrics_mixin.py):
  sglang:generation_tokens_total counts a request's tokens only once it finishes and
  sglang:gen_throughput is a gauge set every decode_log_interval steps (it keeps its last value
  when the scheduler hangs); sglang:realtime_tokens_total{mode} grows at every step, so tokens per
  second and progress come from it. A preemption is a retraction there. With priority
  scheduling its gauges add a series per priority beside the total (priority=""), which a sum
  would count twice.
- llama.cpp's llama-server with --metrics (the tree llama-cpp-python 0.3.36 vendors,
  tools/server/server-task.cpp): no histogram (neither time to first token nor inter-token
  latency), no KV-cache usage, no preemption. llamacpp:tokens_predicted_total grows when a
  request ends (a slot's tokens are added as it is released), llamacpp:n_decode_total at every
  llama_decode() call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from components.engines import ENGINES

# Counters' rate() window: rate() needs two samples in it, and 2 minutes holds four at a 30 s
# scrape interval.
RATE_WINDOW = "2m"
# Histograms' window: a 95th percentile of the last few requests says little.
QUANTILE_WINDOW = "5m"

DEPLOYMENT_LABELS = ("stack", "deployment")
NODE_LABELS = ("stack", "node")


@dataclass(frozen=True)
class Recorded:
    """A recorded series: its name, its Grafana unit and what it says."""
    name: str
    unit: str
    help: str


DECODE_TOKENS = Recorded("bws:decode_tokens_per_second", "short", "tokens generated per second")
PROGRESS = Recorded("bws:progress_per_second", "short",
                    "the engine's finest live work counter per second (vLLM: prompt and generated "
                    "tokens; SGLang: tokens of every mode; llama.cpp: llama_decode() calls); its unit "
                    "differs per engine, only whether it is zero compares")
TTFT_P95 = Recorded("bws:ttft_seconds:p95", "s", "95th percentile of the time to the first token")
ITL_P95 = Recorded("bws:inter_token_latency_seconds:p95", "s", "95th percentile of the time between two tokens")
REQUESTS_RUNNING = Recorded("bws:requests_running", "short", "requests being generated")
REQUESTS_WAITING = Recorded("bws:requests_waiting", "short", "requests queued, not yet running")
KV_CACHE_USAGE = Recorded("bws:kv_cache_usage_ratio", "percentunit", "share of the KV cache in use (1 = full)")
PREEMPTIONS = Recorded("bws:preemptions_per_second", "short", "requests preempted per second (their KV cache taken back)")
DEPLOYMENT_SERIES = (DECODE_TOKENS, PROGRESS, TTFT_P95, ITL_P95, REQUESTS_RUNNING, REQUESTS_WAITING,
                     KV_CACHE_USAGE, PREEMPTIONS)

NODE_MEM_AVAILABLE = Recorded("bws:node_mem_available_bytes", "bytes", "memory available without swapping (MemAvailable)")
NODE_MEM_AVAILABLE_RATIO = Recorded("bws:node_mem_available_ratio", "percentunit", "MemAvailable / MemTotal")
NODE_SWAP_USED = Recorded("bws:node_swap_used_bytes", "bytes", "swap in use")
NODE_SERIES = (NODE_MEM_AVAILABLE, NODE_MEM_AVAILABLE_RATIO, NODE_SWAP_USED)

# PromQL for one recorded series, given the matchers that select a deployment or a node.
Expr = Callable[[str], str]


def matchers(**labels: str) -> str:
    """`stack="lab",deployment="tiny"`: the selector of one deployment or node."""
    return ",".join(f"{k}={json.dumps(v)}" for k, v in labels.items())


def _select(metric: str, where: str, extra: tuple[str, ...]) -> str:
    return f"{metric}{{{','.join((*extra, where))}}}"


def rate_of(metric: str, *extra: str, by: tuple[str, ...] = DEPLOYMENT_LABELS) -> Expr:
    """Per second, summed over the engine's own series (ranks, engine indexes, modes)."""
    return lambda where: f"sum by ({', '.join(by)}) (rate({_select(metric, where, extra)}[{RATE_WINDOW}]))"


def rates_of(*metrics: str) -> Expr:
    """The sum of several counters' rates, each summed on its own: rate() drops the metric name,
    so a rate over a name regex would hold two series with one label set (an error)."""
    return lambda where: " + ".join(rate_of(m)(where) for m in metrics)


def sum_of(metric: str, *extra: str, by: tuple[str, ...] = DEPLOYMENT_LABELS) -> Expr:
    return lambda where: f"sum by ({', '.join(by)}) ({_select(metric, where, extra)})"


def max_of(metric: str, *extra: str, by: tuple[str, ...] = DEPLOYMENT_LABELS) -> Expr:
    """The highest of the engine's series: the ratios of several KV caches (one per data-parallel
    engine) do not add up."""
    return lambda where: f"max by ({', '.join(by)}) ({_select(metric, where, extra)})"


def p95_of(histogram: str) -> Expr:
    by = ", ".join((*DEPLOYMENT_LABELS, "le"))
    return lambda where: (f"histogram_quantile(0.95, sum by ({by}) "
                          f"(rate({_select(histogram + '_bucket', where, ())}[{QUANTILE_WINDOW}])))")


ENGINE_SOURCES: dict[str, dict[Recorded, Expr]] = {
    "vllm": {
        DECODE_TOKENS: rate_of("vllm:generation_tokens_total"),
        PROGRESS: rates_of(*ENGINES["vllm"].progress_counters),
        TTFT_P95: p95_of("vllm:time_to_first_token_seconds"),
        ITL_P95: p95_of("vllm:inter_token_latency_seconds"),
        REQUESTS_RUNNING: sum_of("vllm:num_requests_running"),
        REQUESTS_WAITING: sum_of("vllm:num_requests_waiting"),
        KV_CACHE_USAGE: max_of("vllm:kv_cache_usage_perc"),        # a ratio despite its name: 1 = full
        PREEMPTIONS: rate_of("vllm:num_preemptions_total"),
    },
    "sglang": {
        DECODE_TOKENS: rate_of("sglang:realtime_tokens_total", 'mode="decode"'),
        PROGRESS: rates_of(*ENGINES["sglang"].progress_counters),
        TTFT_P95: p95_of("sglang:time_to_first_token_seconds"),
        ITL_P95: p95_of("sglang:inter_token_latency_seconds"),
        REQUESTS_RUNNING: sum_of("sglang:num_running_reqs", 'priority=""'),
        REQUESTS_WAITING: sum_of("sglang:num_queue_reqs", 'priority=""'),
        KV_CACHE_USAGE: max_of("sglang:token_usage"),
        PREEMPTIONS: rate_of("sglang:num_retracted_requests_total"),
    },
    "llamacpp": {
        DECODE_TOKENS: rate_of("llamacpp:tokens_predicted_total"),  # lands when each request ends
        PROGRESS: rates_of(*ENGINES["llamacpp"].progress_counters),
        REQUESTS_RUNNING: sum_of("llamacpp:requests_processing"),
        REQUESTS_WAITING: sum_of("llamacpp:requests_deferred"),
    },
}


def engine_sources(engine: str) -> dict[Recorded, Expr]:
    """The recorded series of an engine's exposition; none for an engine whose metric names are not
    mapped here (a new engine, docs/extending.md): its deployment still gets its alerts on `up`."""
    return ENGINE_SOURCES.get(engine, {})

# node_exporter's meminfo collector; one exporter per node, so max only drops its job and instance.
NODE_SOURCES: dict[Recorded, Expr] = {
    NODE_MEM_AVAILABLE: max_of("node_memory_MemAvailable_bytes", by=NODE_LABELS),
    NODE_MEM_AVAILABLE_RATIO: lambda where: (f"{max_of('node_memory_MemAvailable_bytes', by=NODE_LABELS)(where)}"
                                             f" / {max_of('node_memory_MemTotal_bytes', by=NODE_LABELS)(where)}"),
    NODE_SWAP_USED: lambda where: (f"{max_of('node_memory_SwapTotal_bytes', by=NODE_LABELS)(where)}"
                                   f" - {max_of('node_memory_SwapFree_bytes', by=NODE_LABELS)(where)}"),
}
