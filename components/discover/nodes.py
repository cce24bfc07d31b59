"""The stack's discovered parts from the machines' facts: each node (name, host, ssh with the
trusted host key, arch, gpu, fabric address, its own fabric names where they differ), the
fabric, and the engine services proposed for retire or keep, each with the comments that say
what was seen."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from components.discover.engines import EngineService, engine_services
from components.discover.fabric import Fabric
from components.discover.facts import ARCHES, DiscoveryError, MachineFacts
from components.platforms import gpu_less_kind, kind_of_gpu_name



@dataclass
class Item:
    """One value of the stack and the comment lines written above it."""
    value: dict
    comments: list[str] = field(default_factory=list)


@dataclass
class Discovered:
    nodes: list[Item]
    fabric: Item | None
    retire: list[Item]
    keep: list[Item]


def node_name(wanted: str | None, facts: MachineFacts, taken: set[str]) -> str:
    """The given name, else the machine's host name made a stack name (a-z0-9-), unique."""
    base = wanted or re.sub(r"[^a-z0-9-]+", "-", (facts.hostname or facts.host).lower()).strip("-")[:36] or "node"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name


def _floor1(value: float) -> float:
    return math.floor(value * 10) / 10


def gpu(facts: MachineFacts) -> dict:
    """gpu: kind, count, memory_gb. Unified memory (GB10: nvidia-smi has no figure) and CPU
    nodes: the machine's memory."""
    if facts.gpu_error:
        raise DiscoveryError(f"{facts.host}: nvidia-smi failed ({facts.gpu_error}); fix: check the NVIDIA driver "
                             f"on the machine (`nvidia-smi` there), then discover it again")
    if not facts.gpus:
        return {"kind": gpu_less_kind(), "count": 1, "memory_gb": _floor1(facts.memory_gib)}
    kinds = {kind_of_gpu_name(g.name) for g in facts.gpus}
    if len(kinds) != 1 or None in kinds:
        names = sorted({g.name for g in facts.gpus})
        raise DiscoveryError(f"{facts.host}: GPUs {names} are not one kind the stacks know (GB10, RTX PRO 6000); "
                             f"fix: discover machines of one known kind (components/config/schema.py GpuSpec)")
    memory = [g.memory_mib for g in facts.gpus]
    per_gpu = min(memory) / 1024 if all(memory) else facts.memory_gib
    return {"kind": kinds.pop(), "count": len(facts.gpus), "memory_gb": _floor1(per_gpu)}


def describe(facts: MachineFacts, fabric: Fabric | None) -> list[str]:
    """The comment lines above a node: what the machine showed that the stack has no key for."""
    g = facts.gpus
    gpus = f"{len(g)}× {g[0].name}" if g else "no GPU"
    docker = ("Docker absent" if facts.docker == "absent" else "Docker not answering" if facts.docker == "unreachable"
              else f"Docker {facts.docker} (runtimes: {', '.join(facts.runtimes) or 'none'})")
    lines = [f"{facts.hostname or facts.host}: {facts.arch}, {facts.memory_gib:.1f} GiB memory, {gpus}; {docker}"]
    if g and "nvidia" not in facts.runtimes:
        lines.append("  no NVIDIA container runtime: engine containers cannot use the GPUs; install the NVIDIA "
                     "Container Toolkit")
    mine = fabric.machines.get(facts.host) if fabric else None
    if mine:
        speed = f"{mine.speed_mbps} Mb/s" if mine.speed_mbps else "speed not reported"
        rdma = ", ".join(mine.hcas) or "none"
        gid = f", RoCE v2 GID index {mine.gid_index}" if mine.gid_index is not None else ""
        lines.append(f"  fabric {mine.netdev} {mine.address}, MTU {mine.mtu}, {speed}; RDMA: {rdma}{gid}")
    return lines


def node_item(name: str, facts: MachineFacts, host_key: str, user: str, port: int, identity: str | None,
              fabric: Fabric | None) -> Item:
    ssh = {"user": user, **({"port": port} if port != 22 else {}),
           **({"private_key_path": identity} if identity else {}), "host_key": host_key}
    value = {"name": name, "host": facts.host, "arch": ARCHES[facts.arch], "gpu": gpu(facts)}
    mine = fabric.machines.get(facts.host) if fabric else None
    if mine:
        value["fabric_address"] = str(mine.address.ip)
        own = {k: v for k, v in (("netdev", mine.netdev), ("hcas", list(mine.hcas)), ("gid_index", mine.gid_index))
               if v != _common(fabric, k) and v not in (None, [])}
        if own:
            value["fabric"] = own
    value["ssh"] = ssh
    return Item(value, describe(facts, fabric))


def _common(fabric: Fabric, key: str):
    value = fabric.common(key)
    return list(value) if isinstance(value, tuple) else value


def fabric_item(fabric: Fabric) -> Item:
    """fabric: the names most nodes share; sockets only (disable_ib) when no node has RDMA."""
    hcas = _common(fabric, "hcas")
    gid_index = fabric.common("gid_index")
    value = {"netdev": fabric.common("netdev"), "mtu": fabric.common("mtu") or 1500,
             "prefix_len": fabric.subnet.prefixlen}
    comments = [f"fabric: subnet {fabric.subnet}, discovered on {len(fabric.machines)} machine(s)"]
    if any(m.hcas for m in fabric.machines.values()):
        value["hcas"] = hcas
        if gid_index is not None:
            value["gid_index"] = gid_index
        else:
            comments.append("  no RoCE v2 GID holds the fabric address: gid_index left at its default (3); "
                            "check `show_gids` on a node")
    else:
        comments.append("  no RDMA device: NCCL/GLOO over TCP sockets on the fabric netdev")
        value.update(disable_ib=True, infiniband_device=False)
    mtus = sorted({m.mtu for m in fabric.machines.values() if m.mtu})
    if len(mtus) > 1:
        comments.append(f"  MTUs differ between the machines ({', '.join(map(str, mtus))}): set one on all of them")
    return Item(value, comments)


def service_items(found: list[EngineService]) -> tuple[list[Item], list[Item], dict[str, list[str]]]:
    """(retire, keep) proposals for the engines found in systemd units, and per node the notes on
    containers that no unit started (retire and keep take units: those are stopped by hand)."""
    retire, keep, notes = [], [], {}
    for e in found:
        what = e.seen
        if e.service.kind == "container":
            notes.setdefault(e.node, []).append(
                f"  container {what}, image {e.service.description}: no systemd unit runs it, so retire/keep "
                f"cannot hold it; `docker stop {e.service.name}` by hand if it is in the way")
        elif e.keep:
            keep.append(Item({"node": e.node, "unit": e.service.name},
                             [f"{what}: an embeddings/reranker server, proposed to keep (move it to retire to stop it)"]))
        else:
            retire.append(Item({"node": e.node, "unit": e.service.name},
                               [f"{what}: proposed to retire (stopped before ours start, restored on destroy; "
                                f"move it to keep to leave it running)"]))
    return retire, keep, notes


def assemble(machines: list[tuple[str, MachineFacts, str]], user: str, port: int, identity: str | None,
             fabric: Fabric | None, patterns=()) -> Discovered:
    """The stack's parts from (node name, facts, trusted host key) per machine and their fabric."""
    nodes = [node_item(name, facts, key, user, port, identity, fabric) for name, facts, key in machines]
    engines = [e for name, facts, _ in machines for e in engine_services(name, facts, list(patterns))]
    retire, keep, notes = service_items(engines)
    for node in nodes:
        node.comments += notes.get(node.value["name"], [])
    return Discovered(nodes=nodes, fabric=fabric_item(fabric) if fabric else None, retire=retire, keep=keep)
