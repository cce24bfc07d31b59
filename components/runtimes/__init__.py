"""Engine runtimes behind one interface (base.py): images[].runtime selects one of RUNTIMES."""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.engines import engine_of
from components.runtimes.base import RankStart, Runtime
from components.runtimes.docker import DockerRuntime
from components.runtimes.venv import VenvRuntime

if TYPE_CHECKING:
    from components.config.schema import StackSpec

RUNTIMES: dict[str, type[Runtime]] = {"docker": DockerRuntime, "venv": VenvRuntime}


def downloader(spec: StackSpec, model: str) -> dict:
    """How the hub download of `model` runs: in its source's downloader_image when it names one;
    else as the runtime of the first deployment that serves it says; a model no deployment serves,
    in the first container image (else a small python one). check_downloader: the image is not
    known to carry python3 with huggingface_hub, so the fetch checks that before it starts."""
    named = spec.model(model).source.downloader_image
    if named:
        return {"downloader_image": named, "downloader_python": None, "check_downloader": True}
    for d in spec.deployments:
        if d.model == model:
            img = spec.image(d.image)
            how = RUNTIMES[img.runtime].hub_downloader(img)
            return {**how, "check_downloader": bool(how["downloader_image"]) and not engine_of(d).images_download}
    bases = [i.base for i in spec.images if RUNTIMES[i.runtime].ranks_in_containers]
    return {"downloader_image": bases[0] if bases else "python:3.12-slim", "downloader_python": None,
            "check_downloader": False}


__all__ = ["RUNTIMES", "RankStart", "Runtime", "downloader"]
