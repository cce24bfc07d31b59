"""The serving engines behind one interface (base.py), one module each; `engine:` in the stack
schema names one of ENGINES. Secrets are not in their command lines: API keys reach the engine
through the environment (Engine.api_key_var)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.engines.base import Engine, Launch, ModelFileError
from components.engines.llamacpp import LlamaCpp
from components.engines.sglang import SGLang
from components.engines.vllm import VLLM

if TYPE_CHECKING:
    from components.config.schema import DeploymentSpec

ENGINES: dict[str, Engine] = {e.name: e for e in (VLLM(), SGLang(), LlamaCpp())}


def engine_of(d: DeploymentSpec) -> Engine:
    return ENGINES[d.engine]


__all__ = ["ENGINES", "Engine", "Launch", "ModelFileError", "engine_of"]
