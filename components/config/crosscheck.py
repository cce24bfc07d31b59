"""Cross-resource checks of a stack config: what two parts of it would both claim on one node —
a TCP port, the GPUs, a unit or container name (the generated ones included), a model cache
directory — and foreign units that must not be listed twice. Each problem is "key.path: what;
fix: how", relative to the stack.
Across deployments, per node: their API ports, SGLang dist-init ports, the ports of Ray clusters
(one Ray cluster per node: each of its nodes binds the agent's port, and ray.port is kept free on
all of them), the gateway's and the layer registry's ports, the SSH port and the system ports;
and the GPUs their engines take there. The memory the deployments sharing a node need together
is checked at preview, where the models' sizes are known (components/sizing/stack_fit.py).

The generated names are components/names.py's, the very functions the components that create
them call (deployment.py, cluster.py, gateway.py, preflight/bandwidth.py, layer_registry.py).
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from components import names
from components.engines import ENGINES
from components.launches import launch_of
from components.names import RAY_AGENT_PORT, RAY_CLIENT_PORT, RAY_DASHBOARD_PORT
from components.platforms import platform

if TYPE_CHECKING:
    from components.config.schema import DeploymentSpec, StackSpec

# Ports below this are the system's (sshd on 22, ...): an engine never takes one.
FIRST_USER_PORT = 1024


def cross_problems(spec: "StackSpec") -> list[str]:
    return [*port_problems(spec), *gpu_problems(spec), *name_problems(spec), *service_list_problems(spec),
            *cache_owner_problems(spec)]


def rank_watch_ranks(d: "DeploymentSpec") -> list[int]:
    """The ranks whose node runs a rank watch (components/resources/watchdog.py RankWatch): every rank but
    the head, for an engine that asks for them (vLLM's native launch), when the deployment is watched."""
    return list(range(1, len(d.nodes))) if ENGINES[d.engine].watches_ranks(d) and d.watchdog.enabled else []


# ---------------------------------------------------------------------------------------------
# Ports

def port_problems(spec: "StackSpec") -> list[str]:
    problems: list[str] = []
    # node → port → (key path, what holds it)
    held: dict[str, dict[int, tuple[str, str]]] = {}
    for i, n in enumerate(spec.nodes):
        held.setdefault(n.name, {})[n.ssh.port] = (f"nodes[{i}].ssh.port", f"the SSH port of node '{n.name}'")
    # (key path, port, node, what it is, what already holds the port, that one's key path)
    clashes: list[tuple[str, int, str, str, str, str]] = []

    def claim(node: str, port: int, path: str, what: str) -> None:
        if port < FIRST_USER_PORT:
            why = " (sshd listens on 22)" if port == 22 else ""
            problems.append(f"{path}: {port} is a system port{why}; "
                            f"fix: use a port from {FIRST_USER_PORT} to 65535 that nothing else on '{node}' uses")
            return
        ports = held.setdefault(node, {})
        if port in ports:
            other_path, other = ports[port]
            if other_path == path and other == what:
                return  # the same claim reached twice (a shared head)
            clashes.append((path, port, node, what, other, other_path))
            return
        ports[port] = (path, what)

    # Fixed ports first, so that a clash is reported on the port the operator can change.
    ray_heads: dict[str, str] = {}
    ray_nodes: dict[str, tuple[str, str]] = {}  # node → (deployment, key path of the node)
    for i, d in enumerate(spec.deployments):
        if not launch_of(d).ray_cluster:
            continue
        head = d.nodes[0]
        if head in ray_heads:
            problems.append(f"deployments[{i}].nodes[0]: node '{head}' is already the Ray head of deployment "
                            f"'{ray_heads[head]}', and every Ray head binds ray.port {spec.ray.port}; "
                            f"fix: put this deployment's head on another node")
            continue
        shared = [(j, n) for j, n in enumerate(d.nodes) if n in ray_nodes]
        for j, n in shared:
            other, other_path = ray_nodes[n]
            problems.append(f"deployments[{i}].nodes[{j}]: node '{n}' is already in the Ray cluster of deployment "
                            f"'{other}' ({other_path}), and every node of a Ray cluster binds the Ray agent's port "
                            f"{RAY_AGENT_PORT} and keeps ray.port {spec.ray.port} free: two clusters on one node "
                            f"collide; fix: give each 'ray' deployment its own nodes")
        if shared:
            continue
        ray_heads[head] = d.name
        for j, n in enumerate(d.nodes):
            ray_nodes[n] = (d.name, f"deployments[{i}].nodes[{j}]")
            claim(n, spec.ray.port, "ray.port", f"the Ray port (GCS) of deployment '{d.name}'s cluster" if j == 0
                  else f"the Ray port of deployment '{d.name}'s cluster, kept free on its workers too")
            claim(n, RAY_AGENT_PORT, f"deployments[{i}].topology",
                  f"the Ray agent's port of deployment '{d.name}'s cluster")
        claim(head, RAY_CLIENT_PORT, f"deployments[{i}].topology",
              f"the Ray client server of deployment '{d.name}'s cluster")
        if spec.ray.dashboard:
            claim(head, RAY_DASHBOARD_PORT, "ray.dashboard", f"the Ray dashboard of deployment '{d.name}'s cluster")
    check = spec.fabric.bandwidth_check if spec.fabric is not None else None
    if check is not None:
        for d in spec.deployments:
            if d.ranks_span_nodes:
                claim(d.nodes[0], check.port, "fabric.bandwidth_check.port", "the fabric bandwidth check's port")
    for i, d in enumerate(spec.deployments):
        p = f"deployments[{i}]"
        launch = launch_of(d)
        for n in launch.api_nodes(d):
            claim(n, d.port, f"{p}.port", f"the API port of deployment '{d.name}'")
        for c in launch.port_claims(d, p):
            claim(c.node, c.port, c.key, c.what)
    if spec.gateway is not None:  # components/resources/gateway.py
        claim(spec.gateway.node, spec.gateway.port, "gateway.port", "the gateway's port")
    if spec.monitoring is not None:  # components/resources/monitoring.py
        claim(spec.monitoring.node, spec.monitoring.port, "monitoring.port", "Prometheus's port")
        for n in spec.nodes:
            claim(n.name, spec.monitoring.exporter_port, "monitoring.exporter_port", "node_exporter's port")
    for n in spec.layer_registry_nodes():  # components/resources/layer_registry.py (on loopback: still the node's port)
        claim(n, spec.fabric.layer_registry.port, "fabric.layer_registry.port", "the layer registry's port")

    # Each clash with a port that is free on its node, once every claim is known.
    suggested: set[tuple[str, int]] = set()
    for path, port, node, what, other, other_path in clashes:
        free = next(q for q in [*range(port + 1, 65536), *range(port - 1, FIRST_USER_PORT - 1, -1)]
                    if q not in held[node] and (node, q) not in suggested)
        suggested.add((node, free))
        problems.append(f"{path}: port {port} on node '{node}' is also {other} ({other_path}); "
                        f"fix: give each its own port (e.g. {path.rsplit('.', 1)[-1]}: {free}, free on '{node}')"
                        if path.startswith(("deployments[", "gateway.", "monitoring.", "fabric.layer_registry."))
                        and path.endswith(("port", "dist_port")) else
                        f"{path}: port {port} on node '{node}' is also {other} ({other_path}); "
                        f"fix: give each its own port")
    return list(dict.fromkeys(problems))


# ---------------------------------------------------------------------------------------------
# GPUs

def gpu_share(spec: "StackSpec", d: "DeploymentSpec", node: str) -> int:
    """The GPUs deployment d's engine takes on one of its engine nodes: its tensor_parallel ×
    pipeline_parallel ranks spread over its engine nodes in proportion to their GPUs (rounded up)."""
    counts = {n: spec.node(n).gpu.count for n in d.engine_nodes}
    world = d.tensor_parallel * d.pipeline_parallel
    return -(-world * counts[node] // sum(counts.values()))


def gpu_problems(spec: "StackSpec") -> list[str]:
    """Per node, the GPUs the engines of every deployment there take, added up, against the node's
    gpu.count. tensor_parallel × pipeline_parallel must equal the GPUs of a deployment's engine
    nodes (references.py), so today a deployment takes every GPU of each of them and two may not
    share one; the sum keeps the check right should a deployment ever take part of a node."""
    problems: list[str] = []
    taken: dict[str, list[tuple[int, str, int]]] = {}  # node → [(deployment index, name, GPUs)]
    for i, d in enumerate(spec.deployments):
        for j, n in enumerate(d.nodes):
            # A cpu node's "GPU" is its cores, which the processes on it share (the lab: an engine
            # of two nodes and a second engine on one of them).
            if n not in d.engine_nodes or not platform(spec.node(n).gpu.kind).has_gpu:
                continue
            need = gpu_share(spec, d, n)
            before = taken.setdefault(n, [])
            count = spec.node(n).gpu.count
            used = sum(g for _, _, g in before)
            if before and used + need > count:
                others = " and ".join(f"deployment '{name}' (deployments[{k}]: {g} GPU{'s' if g > 1 else ''})"
                                      for k, name, g in before)
                spread = f"over {len(d.engine_nodes)} engine nodes" if len(d.engine_nodes) > 1 else "on one node"
                problems.append(
                    f"deployments[{i}].nodes[{j}]: the GPUs of node '{n}' are already taken by {others}; "
                    f"with this deployment's {need} (tensor_parallel {d.tensor_parallel} × pipeline_parallel "
                    f"{d.pipeline_parallel} {spread}) they need {used + need} of its {count} (gpu.count); "
                    f"fix: give each deployment its own nodes, or remove one")
            before.append((i, d.name, need))
    return problems


# ---------------------------------------------------------------------------------------------
# Unit and container names, generated ones included

def generated_names(spec: "StackSpec") -> list[tuple[str, str, str, str, str]]:
    """(node, kind, name, key path, what) for every unit and container the stack creates."""
    out = []
    # The gateway's first: a deployment named 'gateway' is the one to rename.
    if spec.gateway is not None:  # components/resources/gateway.py
        out.append((spec.gateway.node, "unit", names.GATEWAY_UNIT, "gateway", "the gateway's unit"))
        out.append((spec.gateway.node, "container", names.GATEWAY_CONTAINER, "gateway", "the gateway's container"))
    if spec.monitoring is not None:  # components/resources/monitoring.py
        out.append((spec.monitoring.node, "unit", names.PROMETHEUS_UNIT, "monitoring", "Prometheus's unit"))
        out += [(n.name, "unit", names.NODE_EXPORTER_UNIT, "monitoring", "node_exporter's unit") for n in spec.nodes]
    for n in spec.layer_registry_nodes():  # components/resources/layer_registry.py
        out.append((n, "container", names.LAYER_REGISTRY_CONTAINER, "fabric.layer_registry",
                    "the layer registry's container"))
    check = spec.fabric.bandwidth_check if spec.fabric is not None else None
    for i, d in enumerate(spec.deployments):
        path = f"deployments[{i}].name"
        for n in launch_of(d).rank_nodes(d):
            out.append((n, "unit", names.engine_unit(d.name), path, f"the engine unit of deployment '{d.name}'"))
            out.append((n, "container", names.engine_container(d.name), path,
                        f"the engine container of deployment '{d.name}'"))
        if launch_of(d).ray_cluster:
            cluster = names.ray_cluster(d.name)
            for r, n in enumerate(d.nodes):
                role = "head" if r == 0 else "worker"
                out.append((n, "unit", names.ray_unit(cluster, role), path,
                            f"the Ray {role} unit of deployment '{d.name}'"))
                out.append((n, "container", names.ray_container(cluster, role), path,
                            f"the Ray {role} container of deployment '{d.name}'"))
        if d.watchdog.enabled:
            for unit in names.watchdog_units(d.name):
                out.append((d.nodes[0], "unit", unit, path, f"the watchdog of deployment '{d.name}'"))
        for r in rank_watch_ranks(d):
            for unit in names.rank_watch_units(d.name, r):
                out.append((d.nodes[r], "unit", unit, path, f"the rank watch of deployment '{d.name}' (rank {r})"))
        if check is not None and d.ranks_span_nodes:
            for r, n in enumerate(d.nodes):
                out.append((n, "container", names.bandwidth_container(d.name, r), path,
                            f"the fabric bandwidth check of deployment '{d.name}' (rank {r})"))
    return out


def name_problems(spec: "StackSpec") -> list[str]:
    problems: list[str] = []
    seen: dict[tuple[str, str, str], tuple[str, str]] = {}
    for node, kind, name, path, what in generated_names(spec):
        key = (node, kind, name)
        if key in seen and seen[key][1] != what:
            other_path, other = seen[key]
            problems.append(f"{path}: its {kind} name {name} on node '{node}' is also {other} ({other_path}); "
                            f"fix: rename the deployment")
        seen.setdefault(key, (path, what))
    return problems


def service_list_problems(spec: "StackSpec") -> list[str]:
    """A foreign unit listed twice, or two entries whose resources would share a name
    (NODE-UNIT without '.service': node 'a-b' + 'c.service' and node 'a' + 'b-c.service')."""
    problems: list[str] = []
    for what, refs in (("retire", spec.retire), ("keep", spec.keep)):
        seen: dict[str, int] = {}
        for i, ref in enumerate(refs):
            resource = f"{ref.node}-{ref.unit.removesuffix('.service')}"
            if resource in seen:
                j = seen[resource]
                same = (refs[j].node, refs[j].unit) == (ref.node, ref.unit)
                problems.append(f"{what}[{i}]: " + (f"'{ref.unit}' on '{ref.node}' is listed twice ({what}[{j}]); "
                                                     f"fix: list it once" if same else
                                                     f"'{ref.unit}' on '{ref.node}' and {what}[{j}] would both be "
                                                     f"resource '{resource}'; fix: rename one node"))
            else:
                seen[resource] = i
    return problems


# ---------------------------------------------------------------------------------------------
# One owner for every model cache directory

def cache_owner_problems(spec: "StackSpec") -> list[str]:
    """Two models entries whose cache directory is the same on a node they share (same cache_dir and
    REPO--REVISION leaf: names.model_cache_dirs, what components/resources/model.py creates): each
    would fetch, verify and, on destroy, remove the other's weights. The other paths our steps remove on destroy are owned by
    one entry already: image tags and venv directories carry the image's name, env files and units
    the deployment's (names unique: references.py; generated unit names: name_problems)."""
    problems: list[str] = []
    owners: dict[tuple[str, str], int] = {}  # (node, directory) → models index
    for i, m in enumerate(spec.models):
        directory = posixpath.normpath(names.model_cache_dirs(m.cache_dir, m.repo, m.revision)[0])
        reported: set[int] = set()
        for n in dict.fromkeys([m.fetch_node, *m.nodes]):
            j = owners.setdefault((n, directory), i)
            if j != i and j not in reported:
                reported.add(j)
                other = spec.models[j]
                problems.append(f"models[{i}]: models[{j}] ({other.name}) and models[{i}] ({m.name}) would both own "
                                f"{directory} on node '{n}' (the same repo, revision and cache_dir): each would fetch "
                                f"it and remove it on destroy; fix: keep one model entry and name it as the model of "
                                f"every deployment that serves it (or give one entry another cache_dir)")
    return problems


# ---------------------------------------------------------------------------------------------
# Per-node fabric overrides

def node_fabric_problems(spec: "StackSpec") -> list[str]:
    """A node's fabric: overrides the stack's fabric, so there must be one; and HCAs mean nothing
    to NCCL when the stack's fabric turns RDMA off."""
    problems: list[str] = []
    for i, n in enumerate(spec.nodes):
        if n.fabric is None:
            continue
        if spec.fabric is None:
            problems.append(f"nodes[{i}].fabric: overrides the stack's fabric, which is absent; fix: add a "
                            f"fabric: section (what every node uses unless it says otherwise) or remove "
                            f"nodes[{i}].fabric")
        elif n.fabric.hcas is not None and spec.fabric.disable_ib:
            problems.append(f"nodes[{i}].fabric.hcas: fabric.disable_ib is true, so NCCL uses no RDMA device on "
                            f"'{n.name}'; fix: remove nodes[{i}].fabric.hcas, or set fabric.disable_ib: false")
    return problems
