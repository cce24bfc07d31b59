"""Engine command lines (vLLM, SGLang) as argv lists built from a deployment's config.
Secrets are not here: API keys reach the engine through the environment."""

from __future__ import annotations

import json

from .config.schema import DeploymentSpec

# The environment variable each engine reads its API key from.
API_KEY_VAR = {"vllm": "VLLM_API_KEY", "sglang": "SGLANG_API_KEY"}


def vllm_argv(d: DeploymentSpec, model_path: str, rank: int = 0, head_address: str | None = None) -> list[str]:
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


def sglang_argv(d: DeploymentSpec, model_path: str, rank: int = 0, head_address: str | None = None) -> list[str]:
    argv = ["python3", "-m", "sglang.launch_server",
            "--model-path", model_path,
            "--served-model-name", d.served_name,
            "--host", str(d.bind), "--port", str(d.port),
            "--tp", str(d.tensor_parallel),
            "--mem-fraction-static", str(d.memory_fraction),
            "--context-length", str(d.max_model_len),
            "--kv-cache-dtype", d.kv_cache_dtype]
    if d.pipeline_parallel > 1:
        argv += ["--pp-size", str(d.pipeline_parallel)]
    if d.topology == "native":
        argv += ["--nnodes", str(len(d.nodes)), "--node-rank", str(rank),
                 "--dist-init-addr", f"{head_address}:{d.dist_port}"]
    if d.max_num_seqs:
        argv += ["--max-running-requests", str(d.max_num_seqs)]
    if d.quantization:
        argv += ["--quantization", d.quantization]
    if d.moe_runner_backend:
        argv += ["--moe-runner-backend", d.moe_runner_backend]
    if d.fp4_gemm_backend:
        argv += ["--fp4-gemm-backend", d.fp4_gemm_backend]
    if d.tool_call_parser:
        argv += ["--tool-call-parser", d.tool_call_parser]
    if d.reasoning_parser:
        argv += ["--reasoning-parser", d.reasoning_parser]
    if d.hierarchical_cache_ratio:
        argv += ["--enable-hierarchical-cache", "--hicache-ratio", str(d.hierarchical_cache_ratio)]
    if "--enable-metrics" not in d.extra_args:
        # Prometheus /metrics on the API port, as vLLM serves it unasked (the stack's scrape config).
        argv += ["--enable-metrics"]
    return argv + list(d.extra_args)


def engine_argv(d: DeploymentSpec, model_path: str, rank: int = 0, head_address: str | None = None) -> list[str]:
    if d.engine == "vllm":
        return vllm_argv(d, model_path, rank, head_address)
    return sglang_argv(d, model_path, rank, head_address)


def rank_argvs(d: DeploymentSpec, model_path: str, head_address: str | None) -> list[list[str]]:
    """Every command line the deployment's ranks run (one unless vLLM's or SGLang's own multi-node
    launch): what the engine's own parser checks before anything is stopped."""
    ranks = len(d.nodes) if d.topology == "native" else 1
    return [engine_argv(d, model_path, rank, head_address) for rank in range(ranks)]
