"""The serving engines behind one interface (base.py), one module each; `engine:` in the stack
schema names one of ENGINES. Secrets are not in their command lines: API keys reach the engine
through the environment (Engine.api_key_var)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.engines.base import Engine, ModelFileError
from components.engines.llamacpp import LlamaCpp
from components.engines.sglang import SGLang
from components.engines.vllm import VLLM

if TYPE_CHECKING:
    from components.config.schema import DeploymentSpec, StackSpec

ENGINES: dict[str, Engine] = {e.name: e for e in (VLLM(), SGLang(), LlamaCpp())}


def engine_of(d: DeploymentSpec) -> Engine:
    return ENGINES[d.engine]


def model_files(spec: StackSpec, model: str) -> list[str] | None:
    """What the deployments serving `model` need of its repository (Engine.model_files): the union
    of their allow patterns; None, the whole snapshot, when one of them needs it whole or none
    serves it."""
    serving = [d for d in spec.deployments if d.model == model]
    wanted: set[str] = set()
    for d in serving:
        files = engine_of(d).model_files(d)
        if files is None:
            return None
        wanted.update(files)
    return sorted(wanted) if serving else None


__all__ = ["ENGINES", "Engine", "ModelFileError", "engine_of", "model_files"]
