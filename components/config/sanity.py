"""Checks of what a stack says about the machines themselves, before anything is planned: the
fabric addresses (the ranks and Ray talk over them: a duplicate, a second subnet, a loopback or
link-local address, or the management address is a hang or a fall-back to the wrong network),
the directories we create and remove on the nodes (never a home or a system directory: destroy
removes them), and a Ray object store, with what the engines reserve, that the node's memory
cannot hold. Each problem is "key.path: what; fix: how", relative to the stack.

The fabric's MTU is one key (fabric.mtu): nodes[].fabric cannot override it (NodeFabric has no
mtu), so the config cannot ask for different MTUs; the preflight compares what each node has.

Warnings (sanity_warnings) do not stop the plan: a DGX Spark's fabric port listed by one of its
two RDMA devices halves NCCL's bandwidth but works."""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from components.engines import ENGINES
from components.launches import launch_of
from components.platforms import platform

if TYPE_CHECKING:
    from components.config.schema import DeploymentSpec, StackSpec

# Directories that are a machine's own: a path of ours is never one of these, nor inside the
# ones marked True (the system's files).
SYSTEM_DIRS = {"/": False, "/bin": True, "/boot": True, "/dev": True, "/etc": True, "/lib": True,
               "/lib32": True, "/lib64": True, "/proc": True, "/sbin": True, "/sys": True, "/usr": True,
               "/run": True, "/home": False, "/root": False, "/var": False, "/var/lib": False, "/var/log": False,
               "/var/cache": False, "/tmp": False, "/opt": False, "/srv": False, "/mnt": False, "/media": False,
               "/usr/local": True}
GB = 10**9  # the decimal GB of gpu.memory_gb (as sizing.model_facts.GB)


def sanity_problems(spec: "StackSpec") -> list[str]:
    return [*fabric_address_problems(spec), *directory_problems(spec), *object_store_problems(spec),
            *claim_problems(spec)]


def sanity_warnings(spec: "StackSpec") -> list[str]:
    return twin_warnings(spec)


def fabric_address_problems(spec: "StackSpec") -> list[str]:
    problems: list[str] = []
    prefix = spec.fabric.prefix_len if spec.fabric is not None else 24
    seen: dict[ipaddress.IPv4Address, str] = {}
    networks: dict[ipaddress.IPv4Network, str] = {}
    for i, n in enumerate(spec.nodes):
        a, key = n.fabric_address, f"nodes[{i}].fabric_address"
        if a is None:
            continue
        if a.is_loopback or a.is_link_local or a.is_unspecified or a.is_multicast:
            kind = ("loopback" if a.is_loopback else "link-local" if a.is_link_local
                    else "unspecified" if a.is_unspecified else "multicast")
            problems.append(f"{key}: {a} is a {kind} address; the ranks on other nodes cannot reach it; fix: give "
                            f"the address of {n.name}'s fabric netdev (`ip -4 addr show dev NETDEV` on it)")
            continue
        if str(a) == n.host:
            problems.append(f"{key}: {a} is {n.name}'s management address (host); the ranks would talk over the "
                            f"management network; fix: give the address of its fabric netdev")
        if a in seen:
            problems.append(f"{key}: {a} is also the fabric address of {seen[a]}; fix: give each node the address "
                            f"of its own fabric netdev")
            continue
        seen[a] = n.name
        networks.setdefault(ipaddress.ip_network(f"{a}/{prefix}", strict=False), n.name)
    if len(networks) > 1:
        listed = ", ".join(f"{net} ({name})" for net, name in networks.items())
        problems.append(f"nodes: the fabric addresses are in {len(networks)} subnets of /{prefix}: {listed}; the "
                        f"nodes must share one fabric subnet; fix: correct the odd address, or fabric.prefix_len if "
                        f"the fabric's subnet is larger")
    return problems


def our_directories(spec: "StackSpec") -> Iterator[tuple[str, str]]:
    """(key path, directory) of every directory we create on the nodes and remove on destroy."""
    yield "state_dir", spec.state_dir
    for i, m in enumerate(spec.models):
        yield f"models[{i}].cache_dir", m.cache_dir
    for i, img in enumerate(spec.images):
        venv = getattr(img, "venv", None)
        if venv is not None:
            yield f"images[{i}].venv.root", venv.root
    if spec.fabric is not None and spec.fabric.layer_registry is not None:
        yield "fabric.layer_registry.storage", spec.fabric.layer_registry.storage


def directory_problems(spec: "StackSpec") -> list[str]:
    problems: list[str] = []
    for key, path in our_directories(spec):
        p = path.rstrip("/") or "/"
        parts = p.split("/")
        home = p.startswith("/home/") and len(parts) == 3
        inside = next((d for d, deep in SYSTEM_DIRS.items() if deep and p.startswith(d + "/")), None)
        if p in SYSTEM_DIRS or home or inside:
            what = ("a home directory" if home or p in ("/root", "/home")
                    else f"inside the system's {inside}" if inside else "a system directory")
            problems.append(f"{key}: {path} is {what}; destroy removes what we keep there; fix: a directory of "
                            f"our own, e.g. /var/lib/blackwell-serving/...")
    return problems


def object_store_nodes(spec: "StackSpec", d: "DeploymentSpec") -> list[str]:
    """The nodes where deployment d's Ray object store takes the node's own memory: the nodes of
    a Ray deployment whose GPU kind has unified memory."""
    if not launch_of(d).ray_cluster:
        return []
    kinds = {n.name: n.gpu.kind for n in spec.nodes}  # a node not in nodes: is references.py's to report
    return [n for n in d.nodes if n in kinds and platform(kinds[n]).unified_memory]


def object_store_problems(spec: "StackSpec") -> list[str]:
    """Ray's object store lives in the node's memory: on a unified-memory node it cannot exceed it."""
    problems: list[str] = []
    ray_nodes = {n for d in spec.deployments for n in object_store_nodes(spec, d)}
    for i, n in enumerate(spec.nodes):
        if n.name not in ray_nodes:
            continue
        memory = n.gpu.count * n.gpu.memory_gb
        if spec.ray.object_store_gb >= memory:
            problems.append(f"ray.object_store_gb: {spec.ray.object_store_gb:g} GB does not fit in the "
                            f"{memory:g} GB of {n.name} (nodes[{i}].gpu), which also holds the weights; fix: a few "
                            f"GB (the default is 4)")
    return problems


@dataclass(frozen=True)
class Claim:
    """What one deployment reserves on one node, and the key that sets it."""
    deployment: str
    what: str
    bytes: int
    key: str


def node_claims(spec: "StackSpec") -> dict[str, list[Claim]]:
    """node → what each deployment reserves there, in the order of deployments: its engine's
    memory fraction of each GPU, and on unified memory the object store of its Ray cluster."""
    claims: dict[str, list[Claim]] = {}
    gpus = {n.name: n.gpu for n in spec.nodes}  # a node not in nodes: is references.py's to report
    for i, d in enumerate(spec.deployments):
        # An engine that takes no memory share claims what its model and context need: the
        # preflight's fit counts it, once the model's size is read.
        fraction_nodes = d.engine_nodes if ENGINES[d.engine].memory_fraction_flag else []
        for n in (n for n in fraction_nodes if n in gpus):
            gpu = gpus[n]
            claims.setdefault(n, []).append(Claim(
                d.name, f"{d.name}: memory_fraction {d.memory_fraction:g} × {gpu.memory_gb:g} GB × {gpu.count} GPU"
                + ("s" if gpu.count > 1 else ""),
                math.ceil(d.memory_fraction * gpu.memory_gb * GB * gpu.count), f"deployments[{i}].memory_fraction"))
        for n in object_store_nodes(spec, d):
            claims.setdefault(n, []).append(Claim(
                d.name, f"{d.name}: Ray object store {spec.ray.object_store_gb:g} GB",
                math.ceil(spec.ray.object_store_gb * GB), "ray.object_store_gb"))
    return claims


def claim_problems(spec: "StackSpec") -> list[str]:
    """On a unified-memory node, what its deployments reserve (their engines' memory fractions and
    the object store) added up against the node's memory_gb: the preflight compares the same claim
    with what the node has free, this with what the stack says the node has (also offline). A node
    whose object store alone overflows it is object_store_problems'; one whose GPU two engines
    claim is crosscheck.gpu_problems'."""
    problems: list[str] = []
    claimed = node_claims(spec)
    for i, n in enumerate(spec.nodes):
        claims = claimed.get(n.name, [])
        memory = int(n.gpu.memory_gb * GB) * n.gpu.count
        total = sum(c.bytes for c in claims)
        engines = sum(c.key.endswith("memory_fraction") for c in claims)
        if (not platform(n.gpu.kind).reserves_claims or total <= memory or engines > 1
                or spec.ray.object_store_gb * GB >= memory):
            continue
        keys = list(dict.fromkeys(c.key for c in claims))
        fraction_key = next(k for k in reversed(keys) if k.endswith("memory_fraction"))
        parts = " + ".join(f"{c.what} ({c.key})" for c in claims)
        problems.append(f"{fraction_key}: node '{n.name}' cannot hold what its deployments reserve there: {parts} = "
                        f"{total / GB:.1f} GB of its {memory / GB:g} GB (nodes[{i}].gpu.memory_gb × gpu.count); "
                        f"fix: lower {' / '.join(keys)} until they add up to at most {memory / GB:g} GB, or "
                        f"correct nodes[{i}].gpu.memory_gb")
    return problems


# A DGX Spark's ConnectX-7 port is two PCIe x4 functions, one in PCIe domain 0000 and one in 0002,
# each with its RDMA device: rocep1s0f1 and roceP2p1s0f1 (rdma-core's names: roce, P<domain>
# unless 0, p<bus>s<slot>f<function>). NCCL uses the ones NCCL_IB_HCA lists: one of the two is
# half the port's bandwidth (nccl-tests busbw 98 against 161 Gbit/s on a back-to-back pair).
SPARK_TWIN_DOMAINS = (0, 2)
RDMA_PCI_NAME = re.compile(r"^roce(?:P(?P<domain>[0-9]+))?(?P<function>p[0-9]+s[0-9]+f[0-9]+)(?::[0-9]+)?$")


def twin_warnings(spec: "StackSpec") -> list[str]:
    """A gb10 node whose HCAs list one of a port's two PCIe twins and not the other, by their names
    alone (where the names follow rdma-core's PCI naming; the preflight reads the node's sysfs)."""
    if spec.fabric is None or spec.fabric.disable_ib:
        return []
    warnings: list[str] = []
    for i, n in enumerate(spec.nodes):
        if not platform(n.gpu.kind).twin_hca_ports:
            continue
        own = n.fabric is not None and n.fabric.hcas is not None
        hcas = n.fabric.hcas if own else spec.fabric.hcas
        listed = {h.split(":")[0] for h in hcas}
        for h in sorted(listed):
            m = RDMA_PCI_NAME.match(h)
            domain = int(m["domain"] or 0) if m else None
            if domain not in SPARK_TWIN_DOMAINS:
                continue
            other = SPARK_TWIN_DOMAINS[1 - SPARK_TWIN_DOMAINS.index(domain)]
            twin = f"roce{f'P{other}' if other else ''}{m['function']}"
            if twin not in listed:
                key = f"nodes[{i}].fabric.hcas" if own else "fabric.hcas"
                warnings.append(f"{key}: {n.name} (gb10) lists {h} but not its PCIe twin {twin}: a DGX Spark's "
                                f"port is two PCIe devices and NCCL with one of them gets about half the port's "
                                f"bandwidth; fix: add {twin} to {key} (ibdev2netdev on {n.name} lists both)")
    return warnings
