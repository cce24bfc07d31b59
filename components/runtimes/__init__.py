"""Engine runtimes behind one interface (base.py): images[].runtime selects one of RUNTIMES."""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.runtimes.base import RankStart, Runtime
from components.runtimes.docker import DockerRuntime
from components.runtimes.venv import VenvRuntime

if TYPE_CHECKING:
    from components.config.schema import StackSpec

RUNTIMES: dict[str, type[Runtime]] = {"docker": DockerRuntime, "venv": VenvRuntime}


def downloader(spec: StackSpec, model: str) -> dict:
    """How the hub download of `model` runs: as the runtime of the first deployment that serves it
    says; a model no deployment serves, in the first container image (else a small python one)."""
    for d in spec.deployments:
        if d.model == model:
            img = spec.image(d.image)
            return RUNTIMES[img.runtime].hub_downloader(img)
    bases = [i.base for i in spec.images if RUNTIMES[i.runtime].ranks_in_containers]
    return {"downloader_image": bases[0] if bases else "python:3.12-slim", "downloader_python": None}


__all__ = ["RUNTIMES", "RankStart", "Runtime", "downloader"]
