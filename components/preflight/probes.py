"""Preflight checks run on the nodes before any unit is stopped or started: the engine image
knows the model and its own parser takes our command lines (EngineProbe), and each node's fabric link is usable (FabricCheck). Retiring
a service depends on them, so a failure leaves every running service as it was."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pulumi

from components.config.schema import FabricSpec
from components.engines import Engine
from components.facts import FabricUp
from components.facts.rdma_port import rdma_port
from components.resources.component import Component, Ready
from components.resources.fabric import node_fabric
from components.resources.image import peer_values
from components.resources.node import Node
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run
from components.steps.render import python_program, render


@dataclass(frozen=True)
class EngineProbeArgs:
    """deployment: its name; image: the tag (or venv directory) the probe runs in, image_id its
    trigger; argvs: the command line of each rank; venv_python: the venv's python (None: the
    probe runs in a container of the image)."""
    deployment: str
    engine: Engine
    head: Node
    image: str
    model_dir: str
    argvs: Sequence[Sequence[str]]
    image_id: pulumi.Input[str]
    depends_on: Sequence[pulumi.Resource] = ()
    venv_python: str | None = None


class EngineProbe(Component):
    """Inside the engine image on the head: the engine registers the model's architecture, the
    image's transformers parses its config.json, and the engine's own parser takes `argvs` (the
    command line of each rank, its launch's ranks). The probe program bundles the engine's own
    in-image module (Engine.probe_module) with the checker."""

    TYPE = types.ENGINE_PROBE

    def __init__(self, name: str, args: EngineProbeArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        deployment, engine, head, venv_python = args.deployment, args.engine, args.head, args.venv_python
        self.command = run(f"{name}-engine", head, parent=self, depends_on=args.depends_on,
                           stdin=python_program("probe_engine", "engine_flags", engine.probe_module),
                           step=StepInfo(head.name, "preflight",
                                         do=f"Preflight: the engine {'venv' if venv_python else 'image'} of "
                                            f"{deployment} knows its model and takes its flags "
                                            f"(probe on {head.name})",
                                         undo=f"Drop the engine probe of {deployment}"),
                           triggers=[args.image_id],
                           create=render("scripts/preflight-engine.sh.j2", deployment=deployment, engine=engine.name,
                                         image=args.image, model_dir=args.model_dir,
                                         argvs=[list(a) for a in args.argvs], venv_python=venv_python))
        self.ready = Ready.of([(head.name, self.command)])
        self.register_outputs({})


def fabric_script_values(node: Node, fabric: FabricSpec, peers: Sequence[Node]) -> dict:
    """What the fabric check of `node` needs: its own fabric (its netdev and HCAs, when it names
    them), the key its HCAs come from, and each peer's address, netdev and SSH (its MTU is read
    over the fabric when the MTUs differ)."""
    own = node_fabric(fabric, node.spec)
    overrides = node.spec.fabric is not None and node.spec.fabric.hcas is not None
    return dict(node_name=node.name, netdev=own.netdev, address=str(node.spec.fabric_address), mtu=own.mtu,
                hcas=list(own.hcas), hca_names=[h.split(":")[0] for h in own.hcas],
                hcas_key=f"nodes[].fabric.hcas of {node.name}" if overrides else "fabric.hcas",
                peers=[dict(**peer_values(node, p, fabric), netdev=node_fabric(fabric, p.spec).netdev)
                       for p in peers])


@dataclass(frozen=True)
class FabricCheckArgs:
    node: Node
    fabric: FabricSpec
    peers: Sequence[Node]


class FabricCheck(Component):
    """On one node: the fabric netdev is up with its address and MTU, the peers' MTU the same,
    RDMA ports are ACTIVE (and every RDMA device of the port listed, else a warning), and the
    peers answer on their fabric addresses with frames of the full MTU."""

    TYPE = types.FABRIC_CHECK

    def __init__(self, name: str, args: FabricCheckArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        node = args.node
        values = fabric_script_values(node, args.fabric, args.peers)
        fabric = node_fabric(args.fabric, node.spec)  # its own netdev and HCAs, when it names them
        self.command = run(f"{name}-check", node, parent=self,
                           step=StepInfo(node.name, "preflight",
                                         do=f"Preflight: the fabric link of {node.name} is up "
                                            "(address, MTU, RDMA ports, peers)",
                                         undo=f"Drop the fabric check of {node.name}"),
                           create=render("scripts/preflight-fabric.sh.j2", **values),
                           expect=FabricUp(node.name, fabric.netdev, str(node.spec.fabric_address), fabric.mtu,
                                           tuple(rdma_port(h) for h in fabric.hcas)))
        self.ready = Ready.of([(node.name, self.command)])
        self.register_outputs({})
