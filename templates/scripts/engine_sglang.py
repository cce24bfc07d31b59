"""SGLang, as the engine probe and the venv verify read it inside the image (bundled with them by
components/render.py python_program; components/engines/sglang.py names it). The interface is
engine_vllm.py's."""

import argparse

MODULE = "sglang"
DISTS = ("sglang",)
ARGS_AFTER = "sglang.launch_server"
RENAMES = (
    # PR sgl-project/sglang#16534 (2026-01-06) added --fp4-gemm-backend. Seed 003's main build
    # took --fp4-gemm-runner-backend (probably a main where the flag came from the field name
    # fp4_gemm_runner_backend; today's main sets cli_name="--fp4-gemm-backend"). Release 0.5.23
    # rejects --fp4-gemm-runner-backend (issue 24); 0.5.12 already rejects the twin
    # --fp8-gemm-runner-backend for --fp8-gemm-backend (InferenceX PR #1447), so likely the fp4
    # one too. The exact commits and releases of each switch are not established.
    ("--fp4-gemm-runner-backend", "--fp4-gemm-backend",
     "--fp4-gemm-backend from 2026-01 (PR #16534) and in release 0.5.23 (0.5.12 likely: it takes "
     "--fp8-gemm-backend); --fp4-gemm-runner-backend only in some 2026 main builds"),
)


def known_architectures() -> set:
    from sglang.srt.models.registry import ModelRegistry
    return set(ModelRegistry.models)


def serve_parser():
    from sglang.srt.server_args import ServerArgs
    parser = argparse.ArgumentParser(prog="sglang.launch_server")
    ServerArgs.add_cli_args(parser)
    return parser, "sglang.srt.server_args.ServerArgs.add_cli_args"


def help_argvs(python: str, path: str) -> list:
    return [[python, "-m", "sglang.launch_server", "--help"]]
