"""Cross-resource checks of a stack config: what two parts of it would both claim on one node —
a TCP port, the GPUs, a unit or container name (the generated ones included) — and foreign units
that must not be listed twice. Each problem is "key.path: what; fix: how", relative to the stack.

The names generated here follow the components that create them (read-only mirror):
components/deployment.py (bws-NAME.service, container bws-NAME), components/cluster.py (the Ray
cluster NAME-ray: bws-NAME-ray-head / bws-NAME-ray-worker), components/preflight/bandwidth.py
(containers bws-NAME-bw-RANK) and components/services.py (resources NODE-UNIT).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .schema import DeploymentSpec, StackSpec

# Ports below this are the system's (sshd on 22, ...): an engine never takes one.
FIRST_USER_PORT = 1024
# What `ray start --head` binds besides its GCS port: the Ray client server, and the dashboard.
RAY_CLIENT_PORT = 10001
RAY_DASHBOARD_PORT = 8265


def cross_problems(spec: "StackSpec") -> list[str]:
    return [*port_problems(spec), *gpu_problems(spec), *name_problems(spec), *service_list_problems(spec)]


def engine_unit_nodes(d: "DeploymentSpec") -> list[str]:
    """The nodes that run the deployment's own unit: every rank for SGLang's native launch, the
    head otherwise."""
    return list(d.nodes) if d.topology == "native" else d.nodes[:1]


# ---------------------------------------------------------------------------------------------
# Ports

def port_problems(spec: "StackSpec") -> list[str]:
    problems: list[str] = []
    # node → port → (key path, what holds it)
    held: dict[str, dict[int, tuple[str, str]]] = {}
    for i, n in enumerate(spec.nodes):
        held.setdefault(n.name, {})[n.ssh.port] = (f"nodes[{i}].ssh.port", f"the SSH port of node '{n.name}'")

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
            problems.append(f"{path}: port {port} on node '{node}' is also {other} ({other_path}); "
                            f"fix: give each its own port")
            return
        ports[port] = (path, what)

    # Fixed ports first, so that a clash is reported on the port the operator can change.
    ray_heads: dict[str, str] = {}
    for i, d in enumerate(spec.deployments):
        if d.topology != "ray":
            continue
        head = d.nodes[0]
        if head in ray_heads:
            problems.append(f"deployments[{i}].nodes[0]: node '{head}' is already the Ray head of deployment "
                            f"'{ray_heads[head]}', and every Ray head binds ray.port {spec.ray.port}; "
                            f"fix: put this deployment's head on another node")
            continue
        ray_heads[head] = d.name
        claim(head, spec.ray.port, "ray.port", f"the Ray port of deployment '{d.name}'s cluster")
        claim(head, RAY_CLIENT_PORT, f"deployments[{i}].topology",
              f"the Ray client server of deployment '{d.name}'s cluster")
        if spec.ray.dashboard:
            claim(head, RAY_DASHBOARD_PORT, "ray.dashboard", f"the Ray dashboard of deployment '{d.name}'s cluster")
    check = spec.fabric.bandwidth_check if spec.fabric is not None else None
    if check is not None:
        for d in spec.deployments:
            if d.topology != "single":
                claim(d.nodes[0], check.port, "fabric.bandwidth_check.port", "the fabric bandwidth check's port")
    for i, d in enumerate(spec.deployments):
        p = f"deployments[{i}]"
        for n in engine_unit_nodes(d):
            claim(n, d.port, f"{p}.port", f"the API port of deployment '{d.name}'")
        if d.topology == "native":
            claim(d.nodes[0], d.dist_port, f"{p}.dist_port", f"the SGLang dist-init port of deployment '{d.name}'")
    return list(dict.fromkeys(problems))


# ---------------------------------------------------------------------------------------------
# GPUs

def gpu_problems(spec: "StackSpec") -> list[str]:
    """tensor_parallel × pipeline_parallel equals the GPUs of a deployment's engine nodes (see
    references.py), so a deployment takes every GPU of each of them: two may not share one."""
    problems: list[str] = []
    owner: dict[str, str] = {}
    for i, d in enumerate(spec.deployments):
        for j, n in enumerate(d.nodes):
            if n not in d.engine_nodes:
                continue
            if n in owner:
                problems.append(f"deployments[{i}].nodes[{j}]: the GPUs of node '{n}' are already taken by "
                                f"deployment '{owner[n]}'; fix: give each deployment its own nodes, or remove one")
            else:
                owner[n] = d.name
    return problems


# ---------------------------------------------------------------------------------------------
# Unit and container names, generated ones included

def generated_names(spec: "StackSpec") -> list[tuple[str, str, str, str, str]]:
    """(node, kind, name, key path, what) for every unit and container the stack creates."""
    out = []
    check = spec.fabric.bandwidth_check if spec.fabric is not None else None
    for i, d in enumerate(spec.deployments):
        path = f"deployments[{i}].name"
        for n in engine_unit_nodes(d):
            out.append((n, "unit", f"bws-{d.name}.service", path, f"the engine unit of deployment '{d.name}'"))
            out.append((n, "container", f"bws-{d.name}", path, f"the engine container of deployment '{d.name}'"))
        if d.topology == "ray":
            cluster = f"{d.name}-ray"
            for r, n in enumerate(d.nodes):
                role = "head" if r == 0 else "worker"
                out.append((n, "unit", f"bws-{cluster}-{role}.service", path,
                            f"the Ray {role} unit of deployment '{d.name}'"))
                out.append((n, "container", f"bws-{cluster}-{role}", path,
                            f"the Ray {role} container of deployment '{d.name}'"))
        if check is not None and d.topology != "single":
            for r, n in enumerate(d.nodes):
                out.append((n, "container", f"bws-{d.name}-bw-{r}", path,
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
