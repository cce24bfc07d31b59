"""LayerRegistry (fabric.layer_registry): a Docker registry on a build node, bound to its
loopback, that keeps the layers of the images the node copies to its peers. `docker save`
exports every layer of an image even when the peer needs one; `docker push` uploads only what
the registry lacks. So once the registry holds what a peer holds, an update costs its new layers:
pushed here, read back from the registry and sent alone (templates/scripts/sync-image.sh.j2).
Loopback on the build node: no Docker daemon's configuration changes anywhere (127.0.0.0/8 is
an insecure registry by default), and the peers' daemons never use it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import pulumi

from components.config.schema import LayerRegistry as LayerRegistrySpec
from components.facts import EndpointAnswers
from components.names import LAYER_REGISTRY_CONTAINER
from components.resources.component import Component, Ready
from components.resources.node import Node
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run
from components.steps.render import digest, render

if TYPE_CHECKING:
    from components.resources.image import ContainerImage


def registry_repo(image_name: str) -> str:
    """An image's repository in the registry (its tags: the first 12 hex of each image ID)."""
    return f"bws/{image_name}"


def config_digest(spec: LayerRegistrySpec) -> str:
    """The registry container's label: another configuration replaces the container."""
    return digest(spec.image, str(spec.port), spec.storage)


def registry_scripts(spec: LayerRegistrySpec, node_name: str) -> tuple[str, str]:
    """The start and the remove script of the registry on a node (also tests/lab/dist.py)."""
    values = dict(node_name=node_name, container=LAYER_REGISTRY_CONTAINER, image=spec.image,
                  registry_port=spec.port, storage=spec.storage, config=config_digest(spec))
    return (render("scripts/start-layer-registry.sh.j2", **values),
            render("scripts/remove-layer-registry.sh.j2", **values))


def fill_script(tag: str, port: int, image_name: str) -> str:
    return render("scripts/fill-layer-registry.sh.j2", tag=tag, registry_port=port,
                  registry_repo=registry_repo(image_name))


def layer_registry_name(node: str) -> str:
    return f"layer-registry-{node}"


@dataclass(frozen=True)
class LayerRegistryArgs:
    spec: LayerRegistrySpec
    node: Node


class LayerRegistry(Component):
    """ready: the registry started on its node (the copies from there wait for it); the fills
    come later, after the copies (fill)."""
    TYPE = types.LAYER_REGISTRY

    def __init__(self, name: str, args: LayerRegistryArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        spec, node = args.spec, args.node
        self.name, self.node, self.port, self.config = name, node, spec.port, config_digest(spec)
        start, remove = registry_scripts(spec, node.name)
        # The copies from this node wait for it (components/resources/image.py ImageSync).
        self.start = run(f"{name}-start", node, parent=self,
                         step=StepInfo(node.name, "image",
                                       do=f"Start the layer registry on {node.name} (127.0.0.1:{spec.port})",
                                       undo=f"Remove the layer registry and the layers it keeps from {node.name}"),
                         create=start, delete=remove,
                         expect=EndpointAnswers(node.name, f"http://127.0.0.1:{spec.port}/v2/"))
        self.ready = Ready.of([(node.name, self.start)])
        self.fills: dict[str, pulumi.Resource] = {}
        self.register_outputs({"port": spec.port})

    def fill(self, image: "ContainerImage", after: Sequence[pulumi.Resource]) -> None:
        """Push `image` here once every copy of it is done (`after`): the first distribution never
        waits for the push, and the next update of the image finds its layers here."""
        name = image.spec.name
        self.fills[name] = run(
            f"{self.name}-{name}", self.node, parent=self,
            step=StepInfo(self.node.name, "image", priority="normal",
                          do=f"Keep the layers of image {name} in the layer registry on {self.node.name}",
                          undo=f"Stop keeping the layers of image {name} in the layer registry on {self.node.name}"),
            # Run again for a new image, and for a registry configured anew (maybe another, empty storage).
            depends_on=[*image.ready.all(), self.start, *after], triggers=[image.image_id, self.config],
            create=fill_script(image.tag, self.port, name))
