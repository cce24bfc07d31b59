"""ContainerImage builds the derived engine image (base + transformers upgrade layer + pinned pip
packages) on a node of the base image's arch, under a content-addressed tag. ImageSync puts it
on every other node that needs it, over the fabric, skipped when the image ID already matches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pulumi

from components import names
from components.config.schema import DEFAULT_PEER_KEY, FabricSpec, ImageSpec
from components.facts import ImageCopied, ImagePresent
from components.resources.component import Component, Ready
from components.resources.layer_registry import LayerRegistry, registry_repo
from components.resources.node import Node
from components.resources.relay import relay_plan
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run, tagged_line
from components.steps.render import digest, render


def requirements(spec: ImageSpec) -> list[str]:
    reqs = [f"transformers{spec.transformers}"] if spec.transformers else []
    return reqs + list(spec.pip)


def dockerfile(spec: ImageSpec) -> str:
    return render("docker/Dockerfile.j2", base=spec.base, requirements=requirements(spec),
                  ca_bundle=spec.pip_ca_bundle)


def image_tag(spec: ImageSpec) -> str:
    """The tag is the content address of the Dockerfile: same inputs, same tag, no rebuild."""
    if not requirements(spec):
        return spec.base
    return f"{names.DERIVED_IMAGE_REPOSITORY}/{spec.name}:{digest(dockerfile(spec))}"


@dataclass(frozen=True)
class ContainerImageArgs:
    spec: ImageSpec
    build_node: Node
    depends_on: Sequence[pulumi.Resource] = ()


class ContainerImage(Component):
    TYPE = types.CONTAINER_IMAGE

    def __init__(self, name: str, args: ContainerImageArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        spec, build_node = args.spec, args.build_node
        self.spec = spec
        self.tag = image_tag(spec)
        self.build_node = build_node
        reqs = requirements(spec)
        self.build = run(f"{name}-build", build_node, parent=self, depends_on=args.depends_on,
                         step=StepInfo(build_node.name, "image",
                                       do=f"Build image {spec.name} on {build_node.name} ({', '.join(reqs)})"
                                       if reqs else f"Pull image {spec.base} on {build_node.name}",
                                       undo=f"Remove image {spec.name} from {build_node.name}"),
                         create=render("scripts/build-image.sh.j2", tag=self.tag, base=spec.base,
                                       dockerfile=dockerfile(spec), ca_bundle=spec.pip_ca_bundle,
                                       pull_only=self.tag == spec.base),
                         delete=render("scripts/remove-image.sh.j2", tag=self.tag)
                         if self.tag != spec.base else None,
                         expect=ImagePresent(build_node.name, self.tag))
        self.image_id = tagged_line(self.build.stdout, "image-id")
        self.ready = Ready.of([(build_node.name, self.build)])
        self.register_outputs({"tag": self.tag, "image_id": self.image_id})


def over(fabric: FabricSpec | None) -> str:
    """How bytes move between nodes, in the todo list's words."""
    return "over the fabric" if fabric is not None else "over the management network"


def peer_values(source: Node, peer: Node, fabric: FabricSpec | None) -> dict:
    """What a script on `source` needs to reach `peer` over the fabric (or, without one, over
    the management network), with the peer's host key pinned."""
    key = fabric.peer_key if fabric else DEFAULT_PEER_KEY
    return dict(peer_name=peer.name, peer_address=str(peer.spec.fabric_address or peer.spec.host),
                peer_user=peer.spec.ssh.user, peer_host_key=peer.spec.ssh.host_key, peer_key=key)


def staging_dir(state_dir: str) -> str:
    """Where a peer keeps the layers of an image copy while it arrives (one directory per image
    ID, removed once the image is loaded): what lets an interrupted copy resume."""
    return f"{state_dir}/image-staging"


@dataclass(frozen=True)
class ImageSyncArgs:
    image: ContainerImage
    peers: Sequence[Node]
    fabric: FabricSpec | None
    state_dir: str
    registry: LayerRegistry | None = None


class ImageSync(Component):
    """Only the layers a peer lacks cross the fabric (templates/scripts/image_layers.py), staged
    on the peer as they arrive so an interrupted copy resumes at layer granularity. Past one
    peer, peers that hold the image pass it on (components/resources/relay.py). With a layer registry on
    the build node, its own copies read the new layers from there (components/resources/layer_registry.py);
    copies from peers keep `docker save`."""

    TYPE = types.IMAGE_SYNC

    def __init__(self, name: str, args: ImageSyncArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        image, peers, fabric, registry = args.image, args.peers, args.fabric, args.registry
        # Each peer's own pull of the base, beside the build (peers_pull_base): the copy then finds
        # the base's layers there and sends only the rest (templates/scripts/image_layers.py).
        self.base_pulls = {
            peer.name: run(f"{name}-{peer.name}-base", peer, parent=self,
                           step=StepInfo(peer.name, "image", do=f"Pull base image {image.spec.base} on {peer.name}",
                                         undo=f"Keep base image {image.spec.base} on {peer.name} (the operator's)"),
                           create=render("scripts/pull-base.sh.j2", base=image.spec.base))
            for peer in peers} if image.spec.peers_pull_base and image.tag != image.spec.base else {}
        self.copies = {}
        for sender, peer, _, after in relay_plan(image.build_node, peers):
            via = registry if sender is image.build_node else None
            values = dict(tag=image.tag, staging_dir=staging_dir(args.state_dir),
                          registry_port=via.port if via else None, registry_repo=registry_repo(image.spec.name),
                          **peer_values(sender, peer, fabric))
            self.copies[peer.name] = run(f"{name}-{peer.name}", sender, parent=self,
                                         step=StepInfo(sender.name, "image",
                                                       do=f"Copy image {image.spec.name} to {peer.name} {over(fabric)}",
                                                       undo=f"Remove image {image.spec.name} from {peer.name}"),
                                         depends_on=[*image.ready.all(), *(via.ready.all() if via else []),
                                                     *(self.copies[a.name] for a in after),
                                                     *([self.base_pulls[peer.name]] if peer.name in self.base_pulls else [])],
                                         triggers=[image.image_id],
                                         create=render("scripts/sync-image.sh.j2", **values),
                                         delete=render("scripts/unsync-image.sh.j2", **values),
                                         expect=ImageCopied(sender.name, peer.name, image.tag))
        self.ready = Ready.of(self.copies.items())
        self.register_outputs({"peers": [p.name for p in peers]})
