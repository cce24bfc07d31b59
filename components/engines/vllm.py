"""vLLM: `vllm serve`, alone, over a Ray cluster, or with its own multi-node launch (native)."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from components.engines.base import Engine

# vLLM's human-readable sizes (its --kv-cache-memory-bytes takes 1000-based k/m/g/t and 1024-based K/M/G/T).
_SIZE_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
               "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_bytes(text: str) -> int | None:
    text = text.strip()
    unit = text[-1:] if text[-1:] in _SIZE_UNITS and text[-1:] else ""
    number = text[:-1] if unit else text
    try:
        return int(float(number) * _SIZE_UNITS[unit])
    except ValueError:
        return None


class VLLMOptions(BaseModel):
    """vLLM's own deployment keys."""
    speculative: dict[str, str | int | float | bool] | None = Field(
        None, description="vLLM --speculative-config as a mapping")


class VLLM(Engine):
    name = "vllm"
    launches = frozenset({"single", "ray", "native"})
    api_key_var = "VLLM_API_KEY"
    probe_module = "engine_vllm"
    progress_counters = ("vllm:prompt_tokens_total", "vllm:generation_tokens_total")
    Options = VLLMOptions
    dist_port_what = "vLLM master port (--master-port)"
    memory_fraction_flag = "--gpu-memory-utilization"
    # vLLM's CacheDType values for NVIDIA GPUs whose bytes per element the fit knows (0.32 takes
    # more: nvfp4, turboquant_*, *_per_token_head, fp8_ds_mla; fp8_inc is Intel Gaudi's).
    kv_cache_dtypes = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")
    smaller_kv_dtype = "fp8"
    # vllm/v1/core/kv_cache_utils.py: "GPU KV cache size: 12,345 tokens, Maximum concurrency ..." (CPU on its CPU build).
    kv_report_marker = "KV cache size:"
    programs = ("vllm",)
    kv_report_pattern = r"KV cache size: (?P<tokens>[0-9,]+) tokens"

    def argv(self, d, model_path, rank=0, head_address=None):
        argv = ["vllm", "serve", model_path,
                "--served-model-name", d.served_name,
                "--host", str(d.bind), "--port", str(d.port),
                "--tensor-parallel-size", str(d.tensor_parallel),
                "--pipeline-parallel-size", str(d.pipeline_parallel),
                "--gpu-memory-utilization", str(d.memory_fraction),
                "--max-model-len", str(d.max_model_len),
                "--kv-cache-dtype", d.kv_cache_dtype]
        if d.topology == "ray" and d.executor == "ray":
            argv += ["--distributed-executor-backend", "ray"]
        if d.topology == "native":
            # vLLM's own multi-node launch (multiprocessing executor, no Ray): every node runs
            # world / nnodes ranks; they meet on the head's fabric address (torch.distributed's
            # store); the other nodes run headless (no API server), their ranks driven by the head.
            argv += ["--nnodes", str(len(d.nodes)), "--node-rank", str(rank),
                     "--master-addr", str(head_address), "--master-port", str(d.dist_port)]
            if rank > 0:
                argv += ["--headless"]
        if d.max_num_seqs:
            argv += ["--max-num-seqs", str(d.max_num_seqs)]
        if d.quantization:
            argv += ["--quantization", d.quantization]
        if d.tool_call_parser:
            argv += ["--enable-auto-tool-choice", "--tool-call-parser", d.tool_call_parser]
        if d.reasoning_parser:
            argv += ["--reasoning-parser", d.reasoning_parser]
        if d.speculative:
            argv += ["--speculative-config", json.dumps(d.speculative, sort_keys=True)]
        return argv + list(d.extra_args)

    def kv_bytes_allocated(self, d):
        # Its CPU build's KV cache is VLLM_CPU_KVCACHE_SPACE GiB per rank (vllm/platforms/cpu.py sets
        # kv_cache_memory_bytes from it), whatever --gpu-memory-utilization says; anywhere,
        # --kv-cache-memory-bytes sets it so.
        args = list(d.extra_args)
        for i, arg in enumerate(args):
            if arg.startswith("--kv-cache-memory-bytes="):
                return parse_bytes(arg.split("=", 1)[1])
            if arg == "--kv-cache-memory-bytes" and i + 1 < len(args):
                return parse_bytes(args[i + 1])
        space = d.env.get("VLLM_CPU_KVCACHE_SPACE")
        if space and space.strip().isdigit() and int(space) > 0:
            return int(space) * 2**30
        return None

    def restart(self, d):
        # A rank of the native launch whose peer died ends with exit status 0 (its API server
        # shuts down cleanly after the engine's death; found in the lab): on-failure would leave
        # it stopped, and the watchdog leaves a stopped engine to systemd.
        return "always" if d.topology == "native" else "on-failure"

    def watches_ranks(self, d):
        # A rank whose head restarted alone waits on its dead peers for ever (found in the lab).
        return d.topology == "native"

    def layout_problem(self, d):
        world = d.tensor_parallel * d.pipeline_parallel
        if d.topology == "native" and world % len(d.nodes):
            # The multi-node launch gives every node world / nnodes ranks.
            return (f"tensor_parallel: vLLM's native launch puts the same number of ranks on each node, "
                    f"and tensor_parallel × pipeline_parallel = {world} does not divide over "
                    f"{len(d.nodes)} nodes; fix: make the product a multiple of the node count")
        return super().layout_problem(d)
