"""Preflight checks run on the nodes before any unit is stopped or started: the engine image
knows the model (EngineProbe), and each node's fabric link is usable (FabricCheck). Retiring
a service depends on them, so a failure leaves every running service as it was."""

from __future__ import annotations

from typing import Sequence

import pulumi

from .. import types
from ..config.schema import FabricSpec
from ..fabric import node_fabric
from ..node import Node
from ..facts import FabricUp
from ..facts.rdma_port import rdma_port
from ..remote import run
from ..render import TEMPLATES, render
from ..steps import StepInfo

PROBE = (TEMPLATES / "scripts" / "probe_engine.py").read_text()


class EngineProbe(pulumi.ComponentResource):
    """Inside the engine image on the head: the engine registers the model's architecture and
    the image's transformers parses its config.json."""

    def __init__(self, deployment: str, engine: str, head: Node, image: str, model_dir: str, *,
                 image_id: pulumi.Input[str], depends_on: Sequence[pulumi.Resource],
                 venv_python: str | None = None, opts: pulumi.ResourceOptions | None = None):
        super().__init__(types.ENGINE_PROBE, f"{deployment}-preflight", None, opts)
        self.command = run(f"{deployment}-preflight-engine", head, parent=self, depends_on=depends_on, stdin=PROBE,
                           step=StepInfo(head.name, "preflight",
                                         do=f"Preflight: the engine {'venv' if venv_python else 'image'} of "
                                            f"{deployment} knows its model "
                                            f"(probe on {head.name})",
                                         undo=f"Drop the engine probe of {deployment}"),
                           triggers=[image_id],
                           create=render("scripts/preflight-engine.sh.j2", deployment=deployment, engine=engine,
                                         image=image, model_dir=model_dir, venv_python=venv_python))
        self.register_outputs({})


class FabricCheck(pulumi.ComponentResource):
    """On one node: the fabric netdev is up with its address and MTU, RDMA ports are ACTIVE,
    and the peers answer on their fabric addresses."""

    def __init__(self, node: Node, fabric: FabricSpec, peers: Sequence[Node],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(types.FABRIC_CHECK, f"{node.name}-fabric", None, opts)
        fabric = node_fabric(fabric, node.spec)  # its own netdev and HCAs, when it names them
        self.command = run(f"{node.name}-fabric-check", node, parent=self,
                           step=StepInfo(node.name, "preflight",
                                         do=f"Preflight: the fabric link of {node.name} is up "
                                            "(address, MTU, RDMA ports, peers)",
                                         undo=f"Drop the fabric check of {node.name}"),
                           create=render("scripts/preflight-fabric.sh.j2", node_name=node.name, netdev=fabric.netdev,
                                         address=str(node.spec.fabric_address), mtu=fabric.mtu,
                                         hcas=list(fabric.hcas),
                                         peers=[str(p.spec.fabric_address) for p in peers]),
                           expect=FabricUp(node.name, fabric.netdev, str(node.spec.fabric_address), fabric.mtu,
                                           tuple(rdma_port(h) for h in fabric.hcas)))
        self.register_outputs({})
