"""ModelCache: a model at its pinned revision in the cache of every node that needs it. Fetched
once on its fetch node (hub download, an upload from the operator's machine, or a directory
already there), hashed into a manifest, then copied to peers over the fabric (in parallel
streams; past one peer, relayed by the peers that hold it: components/resources/relay.py) and verified.
Everything is staged and renamed, so a cache directory is either complete or absent."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import pulumi

from components import names
from components.config.schema import DEFAULT_COPY_STREAMS, FabricSpec, ModelSpec
from components.facts import CacheComplete, CacheCopied
from components.resources.component import Component, Ready
from components.resources.image import over, peer_values
from components.resources.node import Node
from components.resources.relay import relay_plan
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import directory_digest, run, tagged_line, upload
from components.steps.render import render


def cache_paths(spec: ModelSpec) -> tuple[str, str]:
    """(final, staging) directories of the model on a node."""
    return names.model_cache_dirs(spec.cache_dir, spec.repo, spec.revision)


@dataclass(frozen=True)
class ModelCacheArgs:
    """downloader_image / downloader_python: how a hub download runs (components/runtimes
    downloader): in a container of that image, or with the node's python; check_downloader: the
    image is checked for python3 with huggingface_hub before the download starts. allow_patterns:
    the files of the repository the deployments need (components/engines model_files); None: all."""
    spec: ModelSpec
    fetch_node: Node
    peers: Sequence[Node]
    fabric: FabricSpec | None
    downloader_image: str | None
    downloader_python: str | None = None
    check_downloader: bool = False
    allow_patterns: Sequence[str] | None = None
    hf_token: pulumi.Output[str] | None = None
    depends_on: Sequence[pulumi.Resource] = ()


class ModelCache(Component):
    TYPE = types.MODEL_CACHE

    def __init__(self, name: str, args: ModelCacheArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        spec, fetch_node, fabric, hf_token = args.spec, args.fetch_node, args.fabric, args.hf_token
        self.spec = spec
        self.path, staging = cache_paths(spec)
        common = dict(model_name=spec.name, final_dir=self.path, staging_dir=staging)
        node = fetch_node.name
        with_token = hf_token is not None and spec.source.kind == "hub"
        fetch_after = list(args.depends_on)
        triggers: list[pulumi.Input] = []
        if spec.source.kind == "local":
            # From the operator's machine into the staging directory (again when its content
            # changed); the fetch script then hashes it and renames it into place.
            source = os.path.expanduser(spec.source.path)
            self.upload = upload(f"{spec.name}-upload", fetch_node, local_dir=source, remote_dir=staging,
                                 copy_dest=self.path, parent=self, depends_on=args.depends_on,
                                 step=StepInfo(node, "model", do=f"Upload model {spec.name} from this machine to {node}",
                                               undo=f"Forget the upload of model {spec.name} to {node}"),
                                 expect=CacheComplete(node, self.path))
            fetch_after.append(self.upload)
            triggers.append(directory_digest(source))
        self.fetch = run(
            f"{spec.name}-fetch", fetch_node, parent=self, depends_on=fetch_after, triggers=triggers,
            step=StepInfo(node, "model", do=_fetch_sentence(spec, node), undo=f"Remove model {spec.name} from {node}"),
            create=render("scripts/fetch-model.sh.j2", kind=spec.source.kind, repo=spec.repo,
                          revision=spec.revision, image=args.downloader_image, python=args.downloader_python,
                          check_downloader=args.check_downloader,
                          allow_patterns=args.allow_patterns if spec.source.kind == "hub" else None,
                          with_token=with_token, endpoint=spec.source.endpoint,
                          source_path=spec.source.path or "", **common),
            delete=render("scripts/remove-model.sh.j2", **common),
            stdin=hf_token.apply(lambda t: f"{t}\n") if with_token else None,
            expect=CacheComplete(node, self.path))
        there: dict[str, pulumi.Resource] = {node: self.fetch}
        for sender, peer, _, after in relay_plan(fetch_node, args.peers):
            values = dict(**common, **peer_values(sender, peer, fabric),
                          streams=fabric.copy_streams if fabric else DEFAULT_COPY_STREAMS)
            there[peer.name] = run(
                f"{spec.name}-to-{peer.name}", sender, parent=self,
                depends_on=[self.fetch, *(there[a.name] for a in after)],
                step=StepInfo(sender.name, "model", do=f"Copy model {spec.name} to {peer.name} {over(fabric)}",
                              redo=f"Copy model {spec.name} to {peer.name} again {over(fabric)} "
                                   f"(then the engines reading it there restart)",
                              undo=f"Remove model {spec.name} from {peer.name}"),
                create=render("scripts/sync-model.sh.j2", **values),
                delete=render("scripts/unsync-model.sh.j2", **values),
                expect=CacheCopied(sender.name, peer.name, self.path))
        self.ready = Ready.of(there.items())
        # Per node, where the cache sits now (its directory's inode, printed by the step that placed
        # it): a trigger of the units that read it, so a cache placed again (a repair) restarts them.
        self.placed = {n: tagged_line(step.stdout, "placed") for n, step in there.items()}
        self.register_outputs({"path": self.path, "nodes": list(there)})


def _fetch_sentence(spec: ModelSpec, node: str) -> str:
    if spec.source.kind == "hub":
        mirror = f" from {spec.source.endpoint}" if spec.source.endpoint else ""
        return f"Download model {spec.name} ({spec.repo}) on {node}{mirror}"
    if spec.source.kind == "local":
        return f"Hash and install model {spec.name} on {node}"
    return f"Verify and adopt model {spec.name} from {spec.source.path} on {node}"
