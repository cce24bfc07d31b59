"""The benchmark after a deployment's health gate: single-stream decode tok/s, time to first token
and aggregate tok/s at a configured concurrency, measured on the head against the real endpoint
(the loopback address and port the health gate asks) with a fixed prompt set
(templates/scripts/benchmark_engine.py, sent on stdin, Python's standard library only). Its
figures are the stack output `benchmark`; below deployments[].benchmark.min_decode_tok_s the step
fails `up` with them.

It runs again when the engine units change (their digest is in the script, as for the health
gate) or the benchmark's own settings do, never on a plain second `up`. Phase verify, priority
normal: a measurement, not a step on the path to a serving engine."""

from __future__ import annotations

import json
from typing import Sequence

import pulumi

from components.config.schema import DeploymentSpec
from components.resources.node import Node
from components.steps.info import StepInfo
from components.steps.remote import run, tagged_line
from components.steps.render import TEMPLATES, render

PROGRAM = (TEMPLATES / "scripts" / "benchmark_engine.py").read_text()
# Where the env file is mounted when the program runs in the engine image (no python3 on the node).
KEY_IN_CONTAINER = "/run/secrets/blackwell-serving-benchmark.env"
# The program's key=value lines → the stack output's keys, and their types.
FIGURES = {"decode-tok-s": ("decode_tok_s", float), "ttft-ms": ("ttft_ms", float),
           "aggregate-tok-s": ("aggregate_tok_s", float), "concurrency": ("concurrency", int)}


def program_args(spec: DeploymentSpec, base_url: str) -> list[str]:
    """benchmark_engine.py's argv before the key file: the endpoint, the model, the prompt count
    and set (a JSON list; empty: the program's own), max tokens, concurrency, time bound, the
    floor or '-'."""
    b = spec.benchmark
    return [base_url, spec.served_name, str(b.prompts), json.dumps(list(b.prompt_set)), str(b.max_tokens),
            str(b.concurrency),
            str(b.timeout_s), f"{b.min_decode_tok_s:g}" if b.min_decode_tok_s is not None else "-"]


def figures(stdout: pulumi.Output[str]) -> pulumi.Output[dict]:
    """The program's key=value lines → {decode_tok_s, ttft_ms, aggregate_tok_s, concurrency};
    {} before a run (a preview) or when a figure is missing."""
    picked = [tagged_line(stdout, k) for k in FIGURES]
    return pulumi.Output.all(*picked).apply(lambda values: parse_figures(dict(zip(FIGURES, values))))


def parse_figures(values: dict[str, str]) -> dict:
    out = {}
    for key, (name, kind) in FIGURES.items():
        try:
            out[name] = kind(values.get(key) or "")
        except ValueError:
            return {}
    return out


def benchmark_step(spec: DeploymentSpec, head: Node, *, parent: pulumi.Resource, address: str, engine_digest: str,
                   env_file: str | None, key_var: str, image: str, venv_python: str | None,
                   depends_on: Sequence[pulumi.Resource]):
    """The step on the head, or None when deployments[].benchmark.enabled is false."""
    if not spec.benchmark.enabled:
        return None
    host = f"[{address}]" if ":" in address else address
    script = render("scripts/benchmark.sh.j2", deployment=spec.name, engine_digest=engine_digest,
                    args=program_args(spec, f"http://{host}:{spec.port}"),
                    key_args=[env_file, key_var] if env_file else [], key_in_container=KEY_IN_CONTAINER,
                    image=image, venv_python=venv_python)
    return run(f"{spec.name}-benchmark", head, parent=parent, depends_on=depends_on, stdin=PROGRAM,
               step=StepInfo(head.name, "verify", priority="normal",
                             do=f"Benchmark {spec.name}: decode tok/s, time to first token, aggregate tok/s "
                                f"at concurrency {spec.benchmark.concurrency}",
                             redo=f"Benchmark {spec.name} again (the engine or the benchmark changed)",
                             undo=f"Drop the benchmark of {spec.name}"),
               create=script, timeout_s=spec.benchmark.timeout_s + 120)
