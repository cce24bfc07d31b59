"""The platforms a node's GPU can be (`gpu.kind` in a stack file): one module per kind, each a
Platform (base.py) saying what the rest of the package asks of it. A new platform is one module
here, its PLATFORMS line, and its stack files.

Plain data on the bottom floor: the schema takes its kinds from here; the sanity checks, the
preflight, the Ray cluster, discovery and the monitoring rules ask it the rest, never the kind's
name (tests/unit/test_platforms.py)."""

from __future__ import annotations

from components.platforms import cpu, gb10, rtx_pro_6000
from components.platforms.base import Platform

PLATFORMS: dict[str, Platform] = {m.PLATFORM.kind: m.PLATFORM for m in (gb10, rtx_pro_6000, cpu)}
KINDS = tuple(PLATFORMS)


def platform(kind: str) -> Platform:
    return PLATFORMS[kind]


def gpu_less_kind() -> str:
    """The kind of a machine with no NVIDIA GPU (discovery)."""
    return next(p.kind for p in PLATFORMS.values() if not p.has_gpu)


def kind_of_gpu_name(name: str) -> str | None:
    """The kind whose GPU nvidia-smi names so (discovery), or None."""
    return next((p.kind for p in PLATFORMS.values() if p.smi_name and p.smi_name.lower() in name.lower()), None)


__all__ = ["KINDS", "PLATFORMS", "Platform", "gpu_less_kind", "kind_of_gpu_name", "platform"]
