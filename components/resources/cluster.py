"""RayCluster: a Ray head on the first node and workers on the others, all bound to their fabric
addresses, each a container under systemd; ready when every node has joined."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pulumi

from components import names
from components.config.schema import DockerRun, FabricSpec, NodeSpec, RaySpec
from components.facts import RayMembers
from components.platforms import platform
from components.resources.component import Component, Ready
from components.resources.containers import docker_args
from components.resources.fabric import fabric_environment
from components.resources.node import Node
from components.resources.unit import DROP_PAGE_CACHE, SystemdUnit, SystemdUnitArgs, container_unit_text
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run
from components.steps.render import render

# bash: until HOST:PORT accepts a TCP connection, for at most SECONDS.
WAIT_FOR_PORT = ('end=$((SECONDS + $3)); until (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; do '
                 'if [ "$SECONDS" -ge "$end" ]; then echo "Ray head $1:$2 did not answer in $3 s" >&2; exit 1; fi; '
                 'sleep 2; done')


def ray_tmp_dir(state_dir: str, name: str) -> str:
    """Ray's session directory on the host, shared with the engine's driver container."""
    return f"{state_dir}/ray/{name}"


def ray_memory_monitor(ray: RaySpec, node: NodeSpec) -> dict[str, str]:
    """Ray's memory monitor settings for a node whose GPU shares its memory (RaySpec's comment
    says why and what the values are); none elsewhere (Ray's defaults)."""
    if not platform(node.gpu.kind).ray_memory_monitor:
        return {}
    return {"RAY_memory_monitor_refresh_ms": str(ray.unified_memory_monitor_refresh_ms),
            "RAY_memory_usage_threshold": f"{ray.unified_memory_usage_threshold:g}"}


@dataclass(frozen=True)
class RayClusterArgs:
    """image, image_id: what the Ray containers run (a new ID restarts them); mounts, env: the
    deployment's, for every Ray node (its workers run the engine's ranks)."""
    head: Node
    workers: Sequence[Node]
    image: str
    image_id: pulumi.Input[str]
    fabric: FabricSpec
    ray: RaySpec
    docker: DockerRun
    state_dir: str
    mounts: Sequence[str] = ()
    env: dict[str, str] | None = None
    drop_page_cache: bool = False
    depends_on: Sequence[pulumi.Resource] = ()


class RayCluster(Component):
    """ready: every node has joined (the wait on its head)."""
    TYPE = types.RAY_CLUSTER

    def __init__(self, name: str, args: RayClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        head, workers, image, fabric, ray = args.head, args.workers, args.image, args.fabric, args.ray
        depends_on = args.depends_on
        self.head = head
        self.head_address = str(head.spec.fabric_address)
        self.address = f"{self.head_address}:{ray.port}"
        self.head_unit_name = names.ray_unit(name, "head")
        self.container = names.ray_container(name, "head")
        tmp = ray_tmp_dir(args.state_dir, name)
        self.tmp_dir = tmp
        object_store = str(int(ray.object_store_gb * 1024 ** 3))
        # ExecStartPre of the units that need the head (workers, the engine): after a reboot all
        # start together; each waits (bounded) until the head's GCS port answers.
        self.wait_for_head = ["/bin/bash", "-c", WAIT_FOR_PORT, "wait-for-ray-head", self.head_address,
                              str(ray.port), str(ray.join_timeout_s)]

        def node_unit(node: Node, role: str, command: list[str], unit_name: str, container: str,
                      deps: Sequence[pulumi.Resource], waits: bool = False) -> SystemdUnit:
            # The deployment's env reaches every Ray node (its workers run the engine's ranks).
            env = {**fabric_environment(fabric, node.spec), **ray_memory_monitor(ray, node.spec),
                   **(args.env or {})}
            text = container_unit_text(
                component=f"RayCluster {name}", description=f"blackwell-serving Ray {role} ({name})",
                container=container, image=image, command=command,
                docker_args=docker_args(args.docker, fabric, list(env), [*args.mounts, f"{tmp}:/tmp/ray"]),
                environment=env, restart="always",
                pre_start=[["/usr/bin/mkdir", "-p", tmp], *([self.wait_for_head] if waits else []),
                           *([DROP_PAGE_CACHE] if args.drop_page_cache else [])])
            # A new image under the same tag restarts the container too.
            step = StepInfo(node.name, "cluster", do=f"Start Ray {role} on {node.name}",
                            redo=f"Restart Ray {role} on {node.name} with its new unit",
                            undo=f"Stop Ray {role} on {node.name}")
            return SystemdUnit(f"{name}-{role}-{node.name}",
                               SystemdUnitArgs(node, unit_name, text, step=step, depends_on=deps,
                                               triggers=[args.image_id], container=container,
                                               image=image),
                               pulumi.ResourceOptions(parent=self))

        self.head_unit = node_unit(
            head, "head",
            ["ray", "start", "--head", "--block", f"--node-ip-address={self.head_address}",
             f"--port={ray.port}", f"--object-store-memory={object_store}",
             f"--include-dashboard={'true' if ray.dashboard else 'false'}", "--disable-usage-stats"],
            self.head_unit_name, self.container, depends_on)
        self.worker_units = [
            node_unit(w, "worker",
                      ["ray", "start", "--block", f"--address={self.head_address}:{ray.port}",
                       f"--node-ip-address={w.spec.fabric_address}", f"--object-store-memory={object_store}",
                       "--disable-usage-stats"],
                      names.ray_unit(name, "worker"), names.ray_container(name, "worker"),
                      [*depends_on, *self.head_unit.ready.all()], waits=True)
            for w in workers]
        # Each start of a Ray unit by its install step: the join is checked again after it.
        self.started = [u.started for u in (self.head_unit, *self.worker_units)]
        self.joined = run(f"{name}-ready", head, parent=self,
                          step=StepInfo(head.name, "cluster", do=f"Wait until every node has joined Ray cluster {name}",
                                        undo=f"Forget the readiness check of Ray cluster {name}"),
                          depends_on=[s for u in (self.head_unit, *self.worker_units) for s in u.ready.all()],
                          create=render("scripts/wait-ray.sh.j2", cluster=name, container=self.container,
                                        expected=1 + len(workers), timeout_s=ray.join_timeout_s),
                          triggers=self.started,
                          expect=RayMembers(head.name, self.container, 1 + len(workers)))
        self.ready = Ready.of([(head.name, self.joined)])
        self.register_outputs({"head": head.name, "workers": [w.name for w in workers],
                               "address": self.address})
