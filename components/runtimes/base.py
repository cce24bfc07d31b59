"""The interface of an engine runtime: an image entry placed on its nodes (a container image, or a
venv built on each node), and how a deployment's ranks, its probe and its benchmark run there.
stack.py and deployment.py use it alone; RUNTIMES (components/runtimes/__init__.py) maps
images[].runtime to an implementation."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Sequence

import pulumi

if TYPE_CHECKING:
    from components.config.schema import DeploymentSpec, FabricSpec, ImageSpec
    from components.resources.component import Ready
    from components.resources.layer_registry import LayerRegistry
    from components.resources.node import Node


@dataclass(frozen=True)
class RankStart:
    """What a rank's unit runs, runtime aside: its command line, environment and ordering."""
    component: str                    # the owning component, in the unit's header
    description: str
    container: str                    # the container's name, where the runtime has containers
    command: list[str]                # the engine's argv (components/engines)
    environment: dict[str, str]
    env_file: str | None              # the root-only secrets file, when the deployment has a key
    mounts: list[str]                 # host:container[:ro] binds a container needs
    after: Sequence[str] = ()
    binds_to: Sequence[str] = ()
    restart: str = "on-failure"
    pre_start: Sequence[list[str]] = field(default_factory=list)


@dataclass(frozen=True)
class Placement:
    """What placing an image entry needs of the stack, as plain values: the fabric its copies
    travel over (None: no fabric), the state directory on the nodes, and the deployments that run
    the entry."""
    fabric: FabricSpec | None
    state_dir: str
    deployments: Sequence[DeploymentSpec]


class Runtime(ABC):
    """One image entry on its nodes. tag: what Ray containers and the bandwidth check run (a venv:
    its `current` directory); image_id: the units' trigger; ready: node → the steps after which it
    is there (components/resources/component.py Ready, as the components that place it); python: the node's python our programs run with, None when they run in a container
    of `tag` (templates: the engine probe, the benchmark)."""

    spec: ImageSpec
    tag: str
    image_id: pulumi.Input[str]
    ready: Ready
    python: str | None = None
    # Whether ranks run in containers of the image: the NVIDIA container toolkit must then give
    # them the GPUs (the preflight's ContainerGpus), which a venv process does not need.
    ranks_in_containers: bool = True

    @classmethod
    @abstractmethod
    def place(cls, img: ImageSpec, where: Placement, nodes: Mapping[str, Node],
              registries: Mapping[str, LayerRegistry], *, key_path: str,
              opts: pulumi.ResourceOptions) -> Runtime:
        """Build the entry and put it on every node that needs it (Pulumi components under opts)."""

    @staticmethod
    @abstractmethod
    def hub_downloader(img: ImageSpec) -> dict:
        """How the hub download of a model this entry serves runs (ModelCache's downloader_image,
        downloader_python)."""

    @abstractmethod
    def rank_unit_text(self, d: DeploymentSpec, fabric: FabricSpec | None, start: RankStart) -> str:
        """The systemd unit that runs one rank of deployment d."""

    @abstractmethod
    def rank_container(self, container: str) -> str | None:
        """The container a rank's unit runs (its name), or None when the rank is a plain process."""
