"""The venv runtime: the engine installed into a Python venv on each node of the entry
(components/resources/venv.py VenvEngine); every rank a plain process of that venv under systemd, its
secrets from the root-only EnvironmentFile."""

from __future__ import annotations

from components.resources.venv import VenvEngine, VenvEngineArgs, venv_unit_text
from components.runtimes.base import Runtime


class VenvRuntime(Runtime):
    ranks_in_containers = False

    def __init__(self, venv: VenvEngine):
        self.spec, self.tag, self.image_id = venv.spec, venv.tag, venv.image_id
        self.venv = venv
        self.ready = venv.ready
        self.python = venv.python

    @classmethod
    def place(cls, img, where, nodes, registries, *, key_path, opts):
        return cls(VenvEngine(img.name, VenvEngineArgs(img, [nodes[n] for n in img.nodes], list(where.deployments),
                                                       key_path=key_path), opts))

    @staticmethod
    def hub_downloader(img):
        # The node's own python: the download starts at once, beside the build.
        return {"downloader_image": None, "downloader_python": img.venv.python}

    def rank_unit_text(self, d, fabric, start):
        return venv_unit_text(component=start.component, description=start.description, img=self.spec,
                              command=start.command, environment=start.environment, env_file=start.env_file,
                              after=start.after, binds_to=start.binds_to, restart=start.restart,
                              pre_start=start.pre_start)

    def rank_container(self, container):
        return None  # a plain process of the venv
