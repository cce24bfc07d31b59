"""SGLang: `python3 -m sglang.launch_server`, alone or with its own multi-node launch (native),
where every rank serves the API."""

from __future__ import annotations

from components.engines.base import Engine


class SGLang(Engine):
    name = "sglang"
    launches = frozenset({"single", "native"})
    api_key_var = "SGLANG_API_KEY"
    probe_module = "engine_sglang"
    options = frozenset({"moe_runner_backend", "fp4_gemm_backend", "hierarchical_cache_ratio"})
    dist_port_what = "SGLang dist-init port"

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

    def api_ranks(self, d):
        # The native launch's ranks each run an API server (vLLM's other ranks are --headless).
        return list(range(self.rank_count(d)))

    def layout_problem(self, d):
        if d.topology == "ray":
            return "topology: 'ray' is for vLLM; fix: use topology 'native' for SGLang"
        return super().layout_problem(d)
