"""vLLM: `vllm serve`, alone, over a Ray cluster, or with its own multi-node launch (native)."""

from __future__ import annotations

import json

from components.engines.base import Engine


class VLLM(Engine):
    name = "vllm"
    launches = frozenset({"single", "ray", "native"})
    api_key_var = "VLLM_API_KEY"
    probe_module = "engine_vllm"
    options = frozenset({"speculative"})
    dist_port_what = "vLLM master port (--master-port)"

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
