"""Engine runtimes behind one interface (base.py): images[].runtime selects one of RUNTIMES."""

from __future__ import annotations

from .base import RankStart, Runtime
from .docker import DockerRuntime
from .venv import VenvRuntime

RUNTIMES: dict[str, type[Runtime]] = {"docker": DockerRuntime, "venv": VenvRuntime}

__all__ = ["RUNTIMES", "RankStart", "Runtime"]
