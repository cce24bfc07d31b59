"""NodeResources: on every node a deployment runs on, before anything is stopped, the GPUs the
stack declares are visible (nvidia-smi lists at least gpu.count of them, of gpu.kind) and the
memory the node has free covers what the deployments will claim there. The fit arithmetic
(fit.py) says whether the model fits the GPUs the config describes; this reads what the node
really has free: a GPU rebound to a VM (seed 003), a leftover engine holding memory, a kept
embeddings server on a Spark's unified memory (seed 000).

What a deployment claims on a node is what its engine reserves, whatever the model: the memory
fraction of each GPU (vLLM gpu_memory_utilization, SGLang mem_fraction_static), plus, on unified
memory, the object store of a Ray cluster with a node there. Against it:
- gb10 (unified): MemAvailable, plus what the units this stack retires on the node hold (their
  cgroups and their containers' on the host, their processes' on the GPU): they are stopped
  after the checks, before the engine starts;
- rtx-pro-6000: each GPU's free memory (nvidia-smi) plus what the retired units' processes hold
  on it, against the claim per GPU;
- cpu (the lab): no GPU expected, and the memory only reported: the claim arithmetic of a CPU
  engine says nothing about what it takes (the lab's nodes have a few GB)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import pulumi

from .. import types
from ..config.schema import StackSpec
from ..node import Node
from ..remote import run
from ..render import render
from ..steps import StepInfo
from .model_facts import GB
from .stack_fit import UNIFIED_MEMORY

# What nvidia-smi calls each kind (a substring of its name column).
GPU_NAMES = {"gb10": "GB10", "rtx-pro-6000": "RTX PRO 6000"}


@dataclass(frozen=True)
class Claim:
    """What one deployment reserves on one node, and the key that sets it."""
    deployment: str
    what: str
    bytes: int
    key: str


def node_claims(spec: StackSpec) -> dict[str, list[Claim]]:
    """node → what each deployment reserves there, in the order of deployments:."""
    claims: dict[str, list[Claim]] = {}
    for i, d in enumerate(spec.deployments):
        for n in d.engine_nodes:
            gpu = spec.node(n).gpu
            claims.setdefault(n, []).append(Claim(
                d.name, f"{d.name}: memory_fraction {d.memory_fraction:g} × {gpu.memory_gb:g} GB × {gpu.count} GPU"
                + ("s" if gpu.count > 1 else ""),
                math.ceil(d.memory_fraction * gpu.memory_gb * GB * gpu.count), f"deployments[{i}].memory_fraction"))
        if d.topology == "ray":
            for n in d.nodes:
                if spec.node(n).gpu.kind in UNIFIED_MEMORY:
                    claims.setdefault(n, []).append(Claim(
                        d.name, f"{d.name}: Ray object store {spec.ray.object_store_gb:g} GB",
                        math.ceil(spec.ray.object_store_gb * GB), "ray.object_store_gb"))
    return claims


def script_values(spec: StackSpec, node: str) -> dict:
    """What the rendered script of `node` needs."""
    index = next(i for i, n in enumerate(spec.nodes) if n.name == node)
    gpu = spec.node(node).gpu
    claims = node_claims(spec)[node]
    return dict(node_name=node, node_key=f"nodes[{index}]", kind=gpu.kind, count=gpu.count,
                gpu_name=GPU_NAMES.get(gpu.kind, ""), unified=gpu.kind in UNIFIED_MEMORY,
                claims=[dict(what=c.what, bytes=c.bytes, key=c.key) for c in claims],
                need=sum(c.bytes for c in claims), keys=list(dict.fromkeys(c.key for c in claims)),
                retired=[r.unit for r in spec.retire if r.node == node])


class NodeResources(pulumi.ComponentResource):
    """On one node: its GPUs are visible and its free memory covers the deployments' claims."""

    def __init__(self, node: Node, spec: StackSpec, opts: pulumi.ResourceOptions | None = None):
        super().__init__(types.NODE_RESOURCES, f"{node.name}-resources", None, opts)
        values = script_values(spec, node.name)
        need = f"{values['need'] / GB:.1f} GB"
        do = (f"Preflight: the GPUs and memory of {node.name} (no GPU expected; its deployments' claim of {need} "
              f"reported, not enforced)" if values["kind"] == "cpu" else
              f"Preflight: {node.name} sees its {values['count']} {values['gpu_name']} GPU"
              f"{'s' if values['count'] > 1 else ''} and has the {need} its deployments claim free")
        self.command = run(f"{node.name}-resources-check", node, parent=self,
                           step=StepInfo(node.name, "preflight", do=do,
                                         undo=f"Drop the GPU and memory check of {node.name}"),
                           create=render("scripts/preflight-resources.sh.j2", **values))
        self.register_outputs({})


def resource_checks(spec: StackSpec, nodes: dict[str, Node], opts: pulumi.ResourceOptions) -> list[NodeResources]:
    """One check per GPU node that any deployment runs on, in the order of nodes:. CPU nodes (the
    lab) get none yet: the script's cpu branch (no GPU expected, memory reported) is rendered and
    tested, but a step there would renumber the lab's todo list that tests/unit/todo pins."""
    claimed = node_claims(spec)
    return [NodeResources(nodes[n.name], spec, opts) for n in spec.nodes
            if n.name in claimed and n.gpu.kind != "cpu"]
