"""Checks of what a stack says about the machines themselves, before anything is planned: the
fabric addresses (the ranks and Ray talk over them: a duplicate, a second subnet, a loopback or
link-local address, or the management address is a hang or a fall-back to the wrong network),
the directories we create and remove on the nodes (never a home or a system directory: destroy
removes them), and a Ray object store that the node's memory cannot hold. Each problem is
"key.path: what; fix: how", relative to the stack."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from .schema import StackSpec

# Directories that are a machine's own: a path of ours is never one of these, nor inside the
# ones marked True (the system's files).
SYSTEM_DIRS = {"/": False, "/bin": True, "/boot": True, "/dev": True, "/etc": True, "/lib": True,
               "/lib32": True, "/lib64": True, "/proc": True, "/sbin": True, "/sys": True, "/usr": True,
               "/run": True, "/home": False, "/root": False, "/var": False, "/var/lib": False, "/var/log": False,
               "/var/cache": False, "/tmp": False, "/opt": False, "/srv": False, "/mnt": False, "/media": False,
               "/usr/local": True}
# GPU kinds whose memory is the node's own memory (the object store competes with the weights
# there; the preflight's fit counts them so too).
UNIFIED_MEMORY_KINDS = ("gb10", "cpu")


def sanity_problems(spec: "StackSpec") -> list[str]:
    return [*fabric_address_problems(spec), *directory_problems(spec), *object_store_problems(spec)]


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


def object_store_problems(spec: "StackSpec") -> list[str]:
    """Ray's object store lives in the node's memory: on a unified-memory node it cannot exceed it."""
    problems: list[str] = []
    ray_nodes = {n for d in spec.deployments if d.topology == "ray" for n in d.nodes}
    for i, n in enumerate(spec.nodes):
        if n.name not in ray_nodes or n.gpu.kind not in UNIFIED_MEMORY_KINDS:
            continue
        memory = n.gpu.count * n.gpu.memory_gb
        if spec.ray.object_store_gb >= memory:
            problems.append(f"ray.object_store_gb: {spec.ray.object_store_gb:g} GB does not fit in the "
                            f"{memory:g} GB of {n.name} (nodes[{i}].gpu), which also holds the weights; fix: a few "
                            f"GB (the default is 4)")
    return problems
