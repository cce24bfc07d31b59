"""FabricBandwidth: before anything is stopped, an all-reduce across the nodes of a multi-node
deployment, in its engine image and with the engine's container options, so that what it
measures is the path the engine's tensor parallelism will take. Its bus bandwidth becomes a
stack output; below a floor the preflight fails: fabric.bandwidth_check.min_bus_gbps when set,
else a fraction of the link speed the nodes report (LINE_RATE_FRACTION, of the slowest node's
/sys/class/net/NETDEV/speed); a link that reports none (-1: virtual) gets no floor, and says so."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import pulumi

from components import names
from components.config.schema import BandwidthCheck, DeploymentSpec, FabricSpec
from components.resources.component import Component, Ready
from components.resources.containers import docker_args
from components.resources.fabric import fabric_environment, node_fabric
from components.resources.image import peer_values
from components.resources.node import Node
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run, tagged_line
from components.steps.render import TEMPLATES, render

ALLREDUCE = (TEMPLATES / "scripts" / "allreduce_bandwidth.py").read_text()


# The floor of the bus bandwidth when the stack sets none, as a fraction of the slowest node's link
# speed. NCCL over RDMA nearly fills the link: nccl-tests busbw is ~24 GB/s (192 Gbit/s) per 200G
# NIC (NVIDIA/nccl-tests#119); two DGX Sparks back to back measured 161 Gbit/s with both PCIe twins
# of the port in NCCL_IB_HCA and 98 with one (github.com/tonyd2wild/
# DeepSeek-v4-Flash-Vision-Exp-DSpark-1M-NVFP4-KV-2x-DGX-Spark, pull request 35),
# and 3 GB/s (24 Gbit/s, all_gather) without NCCL_IB_HCA (NVIDIA/dgx-spark-playbooks#102). 0.6 of
# 200G, 120 Gbit/s, passes the healthy pair with room for a smaller buffer than nccl-tests' and
# fails one twin and any fall-back to TCP. gloo (CPU tensors, the lab) moves its data through the
# kernel's TCP, far below the line rate: on the lab's veth (speed 10000 Mb/s) it measured 3.8 to
# 4.8 Gbit/s (16 and 64 MiB, 2 ranks, 2026-12-04; 1.5 under load, docs/stacks.md) and 0.05 through
# a 50 Mbit/s shaper (tc tbf, 8 MiB). 0.01, 0.1 Gbit/s there, is an order of magnitude under the slowest
# healthy figure and twice the throttled one: it fails a link 100 times slower than it reports (a
# shaper, a shared or wrong path), never a busy CPU.
LINE_RATE_FRACTION = {"nccl": 0.6, "gloo": 0.01}


def floor_values(spec: DeploymentSpec, fabric: FabricSpec, index: int, netdev: str) -> dict:
    """What the script needs to hold the bus bandwidth to a floor: the fraction of the line rate
    (when the stack sets no min_bus_gbps), the likely cause of a shortfall and its fix, by backend."""
    if backend(spec) == "nccl":
        cause = ("NCCL fell back to TCP sockets (fabric.disable_ib, or NCCL_IB_DISABLE=1 in "
                 f"deployments[{index}].env; a GID index that is not RoCEv2, fabric.gid_index: show_gids), or it "
                 "uses one HCA of the port's two PCIe twins (fabric.hcas: half the bandwidth), or the link is "
                 "slower than it reports")
        fix = (f"NCCL_DEBUG: INFO in deployments[{index}].env shows NET/IB (RDMA) or NET/Socket (TCP) and the "
               f"devices used; check that NCCL_IB_HCA (fabric.hcas) lists both PCIe twins of the port "
               f"(ibdev2netdev), the link speed (ethtool {netdev}) and the MTU on both nodes and the switch")
    else:
        cause = ("gloo moves its data over TCP: the link is slower than it reports (a shaper: tc qdisc show dev "
                 f"{netdev}; a shared or congested path; an MTU mismatch on the way) or the traffic takes "
                 f"another network than GLOO_SOCKET_IFNAME={netdev}")
        fix = (f"check the link speed (ethtool {netdev}), tc qdisc show dev {netdev} and the MTU on both nodes "
               f"and the switch")
    return dict(fraction=LINE_RATE_FRACTION[backend(spec)], cause=cause, fix=fix)


def time_bound_s(check: BandwidthCheck) -> int:
    """How long any rank may take: start-up (containers, rendezvous, CUDA) plus every transfer
    at 1 Gbit/s, far below any fabric worth serving over — slower, and the check fails rather
    than hangs. An all-reduce moves at most twice its buffer per rank. fabric.bandwidth_check.
    timeout_s, when set, is the bound instead."""
    if check.timeout_s is not None:
        return check.timeout_s
    bits = 2 * check.size_mb * 2**20 * 8 * (check.iterations + 1)
    return 300 + math.ceil(bits / 1e9)


def rank_argv(spec: DeploymentSpec, fabric: FabricSpec, node: Node, rank: int, head: Node, image: str,
              bound_s: int) -> list[list[str]]:
    """One rank's command, in groups of words (one line each in the script): its container,
    bounded by `timeout` (then killed), with the engine's container options, the fabric
    environment of its node, the deployment's own env (its NCCL_* settings are the engine's) and
    where to meet the others — values through `env`, as docker_args expects."""
    check = fabric.bandwidth_check
    env = {**fabric_environment(fabric, node.spec), **spec.env, "MASTER_ADDR": str(head.spec.fabric_address),
           "MASTER_PORT": str(check.port), "WORLD_SIZE": str(len(spec.nodes)), "RANK": str(rank)}
    return [["timeout", "-k", "10", str(bound_s)],
            ["env", *(f"{k}={v}" for k, v in env.items())],
            ["docker", "run", "-i", "--rm", "--name", container(spec.name, rank),
             *docker_args(spec.docker, fabric, list(env), [])],
            ["--entrypoint", "python3", image, "-", backend(spec), str(check.size_mb), str(check.iterations),
             str(bound_s)]]


def hang_fix(spec: DeploymentSpec, fabric: FabricSpec, nodes: Sequence[Node], index: int) -> str:
    """The fix for an all-reduce that did not finish in time: what each node's NCCL (or gloo) was
    told to use, by the config key that sets it. A hang in NCCL's set-up (seed 002: SGLang across
    two Sparks hung in NCCL initialisation) is nearly always the wrong interface, RDMA device or
    GID; NCCL_DEBUG=INFO in the deployment's env makes the next run print NCCL's choices."""
    where = []
    for n in nodes:
        env = {**fabric_environment(fabric, n.spec), **spec.env}
        keys = ["NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_DISABLE"] \
            if backend(spec) == "nccl" else ["GLOO_SOCKET_IFNAME"]
        where.append(f"{n.name}: " + " ".join(f"{k}={env[k]}" for k in keys if k in env))
    if backend(spec) == "nccl":
        return ("fix: check on each node (" + "; ".join(where) + ") that NCCL_SOCKET_IFNAME (fabric.netdev) is "
                "the cabled ConnectX-7 port, up, with the fabric_address of the node (ip -br addr), NCCL_IB_HCA "
                "(fabric.hcas) names the RDMA devices of that port and both are ACTIVE (ibdev2netdev, ibstat), "
                "and NCCL_IB_GID_INDEX (fabric.gid_index) is its RoCEv2 GID (show_gids); a node whose names "
                "differ (re-cabled) sets its own in nodes[].fabric; "
                f"add NCCL_DEBUG: INFO to deployments[{index}].env to see what NCCL chose, or try "
                "fabric.disable_ib: true to test over TCP sockets")
    return ("fix: check on each node (" + "; ".join(where) + ") that GLOO_SOCKET_IFNAME (fabric.netdev) is "
            "up with the node's fabric_address and that the nodes reach each other on it; a node whose netdev "
            "differs sets its own in nodes[].fabric.netdev")


def backend(spec: DeploymentSpec) -> str:
    """What the engine's tensor parallelism uses: NCCL between GPUs, gloo between CPUs (the lab)."""
    return "nccl" if spec.docker.gpus else "gloo"


def container(deployment: str, rank: int) -> str:
    return names.bandwidth_container(deployment, rank)


@dataclass(frozen=True)
class FabricBandwidthArgs:
    """spec: the deployment whose ranks it measures (index: its place in deployments, for
    messages); image: what the ranks run in, image_id its trigger."""
    spec: DeploymentSpec
    nodes: Sequence[Node]
    fabric: FabricSpec
    image: str
    image_id: pulumi.Input[str]
    depends_on: Sequence[pulumi.Resource] = ()
    index: int = 0


class FabricBandwidth(Component):
    """On the head: rank 0 of the all-reduce here, the other ranks on their nodes over SSH."""
    TYPE = types.FABRIC_BANDWIDTH

    def __init__(self, name: str, args: FabricBandwidthArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        spec, nodes, fabric, image, index = args.spec, args.nodes, args.fabric, args.image, args.index
        check, head = fabric.bandwidth_check, nodes[0]
        bound = time_bound_s(check)
        netdev = node_fabric(fabric, head.spec).netdev
        peers = [dict(rank=r, container=container(spec.name, r), netdev=node_fabric(fabric, n.spec).netdev,
                      argv=rank_argv(spec, fabric, n, r, head, image, bound), **peer_values(head, n, fabric))
                 for r, n in enumerate(nodes) if r > 0]
        self.command = run(
            f"{name}-check", head, parent=self, depends_on=args.depends_on, stdin=ALLREDUCE,
            step=StepInfo(head.name, "preflight",
                          do=f"Preflight: measure the fabric's all-reduce bandwidth between "
                             f"{and_list(spec.nodes)} ({backend(spec)})",
                          undo=f"Drop the fabric bandwidth check of {spec.name}"),
            triggers=[args.image_id], timeout_s=bound + 120,
            create=render("scripts/preflight-bandwidth.sh.j2", deployment=spec.name, head_name=head.name,
                          nodes=and_list([n.name for n in nodes]), netdev=netdev,
                          backend=backend(spec), size_mb=check.size_mb,
                          **floor_values(spec, fabric, index, netdev),
                          iterations=check.iterations, port=check.port, min_bus_gbps=check.min_bus_gbps,
                          timeout_s=bound, container=container(spec.name, 0),
                          hang_fix=hang_fix(spec, fabric, nodes, index),
                          argv=rank_argv(spec, fabric, head, 0, head, image, bound), peers=peers))
        self.bus_gbps = tagged_line(self.command.stdout, "bus-gbps")
        self.ready = Ready.of([(head.name, self.command)])
        self.register_outputs({"bus_gbps": self.bus_gbps})


def and_list(names: list[str]) -> str:
    """lab-1 and lab-2; a, b and c (in messages, and in the todo list's sentence)."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
