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
- cpu (the lab): no GPU expected, said in the step's log (the stack declares gpu.kind cpu: never
  a silent skip), and the memory only reported: the claim arithmetic of a CPU engine says
  nothing about what it takes (the lab's nodes have a few GB).

The driver's CUDA version (nvidia-smi's header) must be at least the highest images[].min_cuda
of the engines on the node. With the docker runtime, ContainerGpus then runs `nvidia-smi -L` in
the engine image with --gpus all, once the image is on the node: a container must see as many
GPUs as the host (the NVIDIA container toolkit is what the docker runtime needs and the venv
runtime does not)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pulumi

from components.config.sanity import node_claims
from components.platforms import platform
from components.config.schema import StackSpec
from components.sizing.model_facts import GB
from components.resources.component import Component, Ready
from components.resources.node import Node
from components.runtimes import RUNTIMES
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run
from components.steps.render import render

# The oldest Linux driver branch of each CUDA version (NVIDIA's CUDA Toolkit release notes,
# table "CUDA Toolkit and Corresponding Driver Versions"), for the fix of a driver too old.
CUDA_DRIVERS = {"12.4": "550.54.14", "12.6": "560.28.03", "12.8": "570.26", "12.9": "575.51.03",
                "13.0": "580.65.06"}
# How long `docker run --gpus all IMAGE nvidia-smi -L` may take (create, start, the runtime's
# hook): far more than it does; a hung runtime hook fails the check rather than the up.
CONTAINER_GPUS_TIMEOUT_S = 120


def cuda_version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def cuda_need(spec: StackSpec, node: str) -> dict | None:
    """The highest images[].min_cuda of the engines on `node`: version, image, key and the
    driver that first supports it (when known); None when no engine there sets one."""
    need = None
    for d in spec.deployments:
        if node not in d.nodes:
            continue
        i, img = next((i, img) for i, img in enumerate(spec.images) if img.name == d.image)
        if img.min_cuda and (need is None or cuda_version(img.min_cuda) > cuda_version(need["version"])):
            need = dict(version=img.min_cuda, image=img.name, key=f"images[{i}].min_cuda",
                        driver=CUDA_DRIVERS.get(img.min_cuda, ""))
    return need


def script_values(spec: StackSpec, node: str) -> dict:
    """What the rendered script of `node` needs."""
    index = next(i for i, n in enumerate(spec.nodes) if n.name == node)
    gpu = spec.node(node).gpu
    claims = node_claims(spec)[node]
    return dict(node_name=node, node_key=f"nodes[{index}]", kind=gpu.kind, count=gpu.count,
                gpu_name=platform(gpu.kind).smi_name or "", unified=platform(gpu.kind).unified_memory,
                claims=[dict(what=c.what, bytes=c.bytes, key=c.key) for c in claims],
                need=sum(c.bytes for c in claims), keys=list(dict.fromkeys(c.key for c in claims)),
                retired=[r.unit for r in spec.retire if r.node == node], cuda=cuda_need(spec, node))


@dataclass(frozen=True)
class NodeResourcesArgs:
    """values: what the node's check script is rendered with (script_values)."""
    node: Node
    values: Mapping[str, Any]


class NodeResources(Component):
    """On one node: its GPUs are visible and its free memory covers the deployments' claims."""
    TYPE = types.NODE_RESOURCES

    def __init__(self, name: str, args: NodeResourcesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        node, values = args.node, args.values
        need = f"{values['need'] / GB:.1f} GB"
        do = (f"Preflight: {node.name} has no GPU and none is expected (gpu.kind cpu); its memory reported "
              f"against its deployments' claim of {need}, not enforced" if not platform(values["kind"]).has_gpu else
              f"Preflight: {node.name} sees its {values['count']} {values['gpu_name']} GPU"
              f"{'s' if values['count'] > 1 else ''} and has the {need} its deployments claim free")
        self.command = run(f"{name}-check", node, parent=self,
                           step=StepInfo(node.name, "preflight", do=do,
                                         undo=f"Drop the GPU and memory check of {node.name}"),
                           create=render("scripts/preflight-resources.sh.j2", **values))
        self.ready = Ready.of([(node.name, self.command)])
        self.register_outputs({})


def container_gpu_checks(spec: StackSpec) -> list[tuple[str, str, int]]:
    """(node, image, GPUs to see) of each image whose ranks run in containers (the docker runtime) with
    docker.gpus on a GPU node, in the order of nodes: then images:."""
    pairs = []
    for n in spec.nodes:
        for img in spec.images:
            if RUNTIMES[img.runtime].ranks_in_containers and platform(n.gpu.kind).has_gpu and any(
                    d.image == img.name and n.name in d.nodes and d.docker.gpus for d in spec.deployments):
                pairs.append((n.name, img.name, n.gpu.count))
    return pairs


@dataclass(frozen=True)
class ContainerGpusArgs:
    """image: the image entry's name; tag: what the container runs; node_key: the node's entry in
    the stack config (nodes[i]); count: the GPUs it declares."""
    node: Node
    image: str
    tag: str
    node_key: str
    count: int
    depends_on: Sequence[pulumi.Resource] = ()


class ContainerGpus(Component):
    """On one node, once the engine image is there: a container of it started with --gpus all
    lists the node's GPUs (nvidia-smi -L), bounded by a timeout."""
    TYPE = types.CONTAINER_GPUS

    def __init__(self, name: str, args: ContainerGpusArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        node, image, count = args.node, args.image, args.count
        self.command = run(f"{name}-check", node, parent=self, depends_on=list(args.depends_on),
                           step=StepInfo(node.name, "preflight",
                                         do=f"Preflight: a container of image {image} sees the {count} GPU"
                                            f"{'s' if count > 1 else ''} of {node.name} (docker --gpus all)",
                                         undo=f"Drop the container GPU check of {image} on {node.name}"),
                           create=render("scripts/preflight-container-gpus.sh.j2", node_name=node.name,
                                         node_key=args.node_key, image=image, tag=args.tag, count=count,
                                         timeout_s=CONTAINER_GPUS_TIMEOUT_S))
        self.ready = Ready.of([(node.name, self.command)])
        self.register_outputs({})


def resource_checks(spec: StackSpec, nodes: dict[str, Node], opts: pulumi.ResourceOptions,
                    image_ready: dict[str, Ready] | None = None,
                    tags: dict[str, str] | None = None) -> list:
    """One check per node that any deployment runs on, in the order of nodes: (a CPU node's
    says "no GPU expected" and reports the memory); then, given the images' readiness per node
    and their tags, one container GPU check per docker-runtime engine image on a GPU node."""
    claimed = node_claims(spec)
    checks: list = [NodeResources(f"{n.name}-resources",
                                  NodeResourcesArgs(nodes[n.name], script_values(spec, n.name)), opts)
                    for n in spec.nodes if n.name in claimed]
    if image_ready is not None and tags is not None:
        index = {n.name: i for i, n in enumerate(spec.nodes)}
        checks += [ContainerGpus(f"{n}-{img}-gpus", ContainerGpusArgs(nodes[n], img, tags[img], f"nodes[{index[n]}]",
                                                                       count, image_ready[img].on(n)), opts)
                   for n, img, count in container_gpu_checks(spec)]
    return checks
