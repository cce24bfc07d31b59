"""SGLang: `python3 -m sglang.launch_server`, alone or with its own multi-node launch (native),
where every rank serves the API."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from components.engines.base import Engine

Backend = Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")]


class SGLangOptions(BaseModel):
    """SGLang's own deployment keys."""
    moe_runner_backend: Backend | None = Field(
        None, description="SGLang --moe-runner-backend (flashinfer_cutlass on sm_120: 'auto' targets sm_100)")
    fp4_gemm_backend: Backend | None = Field(
        None, description="SGLang --fp4-gemm-backend (flashinfer_cudnn or flashinfer_cutlass on sm_120)")
    hierarchical_cache_ratio: float | None = Field(None, gt=0, le=1000,
                                                   description="SGLang --enable-hierarchical-cache --hicache-ratio")


class SGLang(Engine):
    name = "sglang"
    launches = frozenset({"single", "native"})
    api_key_var = "SGLANG_API_KEY"
    probe_module = "engine_sglang"
    # its tokens of every mode, at every step (generation_tokens_total lands when a request ends)
    progress_counters = ("sglang:realtime_tokens_total",)
    Options = SGLangOptions
    dist_port_what = "SGLang dist-init port"
    api_on_every_rank = True  # the native launch's ranks each run an API server (vLLM's others are --headless)
    memory_fraction_flag = "--mem-fraction-static"
    # launch_server's --kv-cache-dtype choices whose bytes per element the fit knows (fp4_e2m1 left out).
    kv_cache_dtypes = ("auto", "bf16", "bfloat16", "fp8_e4m3", "fp8_e5m2")
    smaller_kv_dtype = "fp8_e4m3"
    # Its memory pool's line: "KV Cache is allocated. #tokens: 12345, K size: ..., V size: ...".
    kv_report_marker = "KV Cache is allocated"
    programs = ("sglang",)
    kv_report_pattern = r"KV Cache is allocated\. #tokens: (?P<tokens>[0-9]+)"

    def argv(self, d, model_path, rank=0, head_address=None):
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

    def layout_problem(self, d):
        if d.topology == "ray":
            return "topology: 'ray' is for vLLM; fix: use topology 'native' for SGLang"
        return super().layout_problem(d)
