"""ServingStack: the whole stack config as one component, wired in the order the work must
happen: the image and the model (in parallel) and their copies to peers; the preflight checks
on the nodes; only then retire foreign units; the Ray cluster; the engine; the health gate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pulumi

from components import names
from components.config import ConfigError
from components.config.schema import StackSpec
from components.engines import engine_of, model_files
from components.facts.observer import Observer, Prober
from components.launches import Rank, launch_of
from components.preflight.bandwidth import FabricBandwidth, FabricBandwidthArgs
from components.preflight.probes import EngineProbe, EngineProbeArgs, FabricCheck, FabricCheckArgs
from components.preflight.resources import resource_checks
from components.resources.cluster import RayCluster, RayClusterArgs
from components.resources.component import Component, Ready
from components.serving.deployment import Deployment, DeploymentArgs
from components.resources.gateway import gateway_for
from components.resources.layer_registry import LayerRegistry, LayerRegistryArgs, layer_registry_name
from components.resources.model import ModelCache, ModelCacheArgs
from components.resources.node import Node, NodeArgs, read_private_key
from components.resources.services import (
    KeptService,
    KeptServiceArgs,
    RetiredService,
    RetiredServiceArgs,
    foreign_unit_name,
)
from components.runtimes import RUNTIMES, downloader
from components.runtimes.base import Placement
from components.steps import types
from components.steps.info import StepContext
from components.steps.rollback import Rollback
from components.steps.secrets import plain_value, resolve
from components.steps.ssh import Connection


@dataclass(frozen=True)
class ServingStackArgs:
    """spec: the stack config; observe: probe each node once so that the plan sees drift
    (components/facts; off offline); prober: stands in for the SSH probe (tests); monitoring: what
    builds the stack's `monitoring:` on its nodes (components/monitoring/deploy.py monitoring_for,
    a floor above this one: the program and the tests hand it in), called as
    monitoring(spec, stack name, nodes, gates per node, opts)."""
    spec: StackSpec
    observe: bool = False
    prober: Prober | None = None
    monitoring: Callable | None = None


class ServingStack(Component):
    """ready: every deployment's health gate and the gateway's (monitoring has its own)."""
    TYPE = types.SERVING_STACK

    def __init__(self, name: str, args: ServingStackArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        spec = args.spec
        child = pulumi.ResourceOptions(parent=self)
        # Each node's SSH, built once: the steps, the observation and a rollback use the same.
        connections = {n.name: Connection.of_node(n, self._private_key(i, n)) for i, n in enumerate(spec.nodes)}
        # Every step states what it expects on its node; once all are built, each node is probed
        # once and a step whose expectation fails is pending with the reason (components/facts).
        self.observer = Observer(connections, dry_run=pulumi.runtime.is_dry_run(),
                                 prober=args.prober) if args.observe else None
        # A failed `up` puts back what it changed of what serves (components/steps/rollback.py).
        self.rollback = Rollback(connections, enabled=spec.rollback == "auto" and not spec.offline)
        context = StepContext(observer=self.observer, rollback=self.rollback if self.rollback.enabled else None)
        self.nodes = {n.name: Node(n.name, NodeArgs(n, connections[n.name], context), child) for n in spec.nodes}

        self.kept = [KeptService(foreign_unit_name(k.node, k.unit), KeptServiceArgs(self.nodes[k.node], k.unit), child)
                     for k in spec.keep]

        # Images and models have no dependency on each other: the engine plans them in parallel.
        # A layer registry on each node that copies images to peers (fabric.layer_registry).
        self.layer_registries = {n: LayerRegistry(layer_registry_name(n),
                                                  LayerRegistryArgs(spec.fabric.layer_registry, self.nodes[n]), child)
                                 for n in spec.layer_registry_nodes()}
        # A container image, or a venv built on each node (components/runtimes); each with its `ready`.
        self.images = {img.name: RUNTIMES[img.runtime].place(
                           img, Placement(spec.fabric, spec.state_dir, [d for d in spec.deployments if d.image == img.name]),
                           self.nodes, self.layer_registries, key_path=f"images[{i}]", opts=child)
                       for i, img in enumerate(spec.images)}

        self.models = {}
        for i, m in enumerate(spec.models):
            token = resolve(m.hf_token, f"models[{i}].hf_token") if m.hf_token else None
            self.models[m.name] = ModelCache(m.name, ModelCacheArgs(
                m, self.nodes[m.fetch_node], [self.nodes[n] for n in m.nodes if n != m.fetch_node], spec.fabric,
                **downloader(spec, m.name), allow_patterns=model_files(spec, m.name), hf_token=token), child)

        # Deployment → its measured fabric bus bandwidth (Gbit/s), when fabric.bandwidth_check is set.
        self.bus_gbps: dict[str, pulumi.Output[str]] = {}
        # Preflight on the nodes, then retire: a failed check leaves every running service as it was.
        # Every rank of each deployment with its command line, from its launch, computed once: the
        # engine probe checks the very lists the units run.
        self.ranks = {d.name: self._ranks(d) for d in spec.deployments}
        self.preflight = self._preflight(spec, child)
        checked = [s for p in self.preflight for s in p.ready.all()]
        self.retired = [RetiredService(foreign_unit_name(r.node, r.unit),
                                       RetiredServiceArgs(self.nodes[r.node], r.unit, spec.state_dir,
                                                          depends_on=checked), child)
                        for r in spec.retire]
        retired = Ready().union(*(svc.ready for svc in self.retired))

        self.deployments = {}
        for i, d in enumerate(spec.deployments):
            nodes = [self.nodes[n] for n in d.nodes]
            model = self.models[d.model]
            image = self.images[d.image]
            images_there = image.ready.on(*d.nodes)
            # Nothing of ours starts before the checks either, retirements or not.
            gates = [*checked, *retired.on(*d.nodes)]
            cluster = None
            if launch_of(d).ray_cluster:
                cluster_name = names.ray_cluster(d.name)
                cluster = RayCluster(cluster_name, RayClusterArgs(
                    nodes[0], nodes[1:], image=image.tag, image_id=image.image_id, fabric=spec.fabric,
                    ray=spec.ray, docker=d.docker, state_dir=spec.state_dir, env=d.env,
                    drop_page_cache=d.drop_page_cache, mounts=[f"{model.spec.cache_dir}:{model.spec.cache_dir}:ro"],
                    depends_on=[*images_there, *gates]), child)
            api_key = resolve(d.api_key, f"deployments[{i}].api_key") if d.api_key else None
            self.deployments[d.name] = Deployment(d.name, DeploymentArgs(
                d, nodes, runtime=image, ranks=self.ranks[d.name], model_cache_dir=model.spec.cache_dir,
                fabric=spec.fabric, cluster=cluster, api_key=api_key, state_dir=spec.state_dir,
                depends_on=[*images_there, *model.ready.on(*d.nodes), *gates], model_placed=model.placed), child)

        # One OpenAI-compatible endpoint for every model, when the stack has one (components/resources/gateway.py).
        self.gateway = gateway_for(spec.gateway, self.nodes, self.images, self.deployments,
                                   gates=[*checked, *retired.on(spec.gateway.node if spec.gateway else "")],
                                   opts=child, metrics=spec.monitoring is not None)
        # Prometheus and the exporters (absent without `monitoring:`), after what gates each node.
        if spec.monitoring is not None and args.monitoring is None:
            raise ValueError("the stack declares monitoring: but ServingStackArgs.monitoring is None; fix: pass "
                             "components.monitoring.deploy.monitoring_for (as __main__.py does)")
        self.monitoring = (args.monitoring(spec, name, self.nodes, {n: [*checked, *retired.on(n)] for n in self.nodes},
                                           child) if spec.monitoring is not None else None)
        self.ready = Ready().union(*(d.ready for d in self.deployments.values()),
                                   *([self.gateway.ready] if self.gateway is not None else []))

        for node in self.nodes.values():
            node.finish()
        self.endpoints = {n: d.endpoint for n, d in self.deployments.items()}
        self.register_outputs({"endpoints": self.endpoints})
        if self.observer is not None:
            self.observer.observe()

    def _ranks(self, d) -> list[Rank]:
        head_fabric = self.nodes[d.nodes[0]].spec.fabric_address
        return launch_of(d).ranks(d, self.models[d.model].path, str(head_fabric) if head_fabric else None)

    def _preflight(self, spec: StackSpec, child: pulumi.ResourceOptions) -> list:
        """The engine probe of each deployment (on its head, once image and model are there),
        the fabric check of each node of a multi-node deployment and, when configured, the
        fabric bandwidth of each multi-node deployment."""
        checks: list = []
        fabric_nodes: dict[str, list[str]] = {}
        for d in spec.deployments:
            head, model = d.nodes[0], self.models[d.model]
            image = self.images[d.image]
            checks.append(EngineProbe(f"{d.name}-preflight", EngineProbeArgs(
                d.name, engine_of(d), self.nodes[head], image.tag, model.path, [r.argv for r in self.ranks[d.name]],
                image_id=image.image_id,
                venv_python=image.python, depends_on=[*image.ready.on(head), *model.ready.on(head)]), child))
            if launch_of(d).spans_nodes:
                for n in d.nodes:
                    fabric_nodes.setdefault(n, [])
                    fabric_nodes[n] += [p for p in d.nodes if p != n and p not in fabric_nodes[n]]
        links = {n: FabricCheck(f"{n}-fabric", FabricCheckArgs(self.nodes[n], spec.fabric,
                                                               [self.nodes[p] for p in peers]), child)
                 for n, peers in fabric_nodes.items()}
        checks += links.values()
        # Each node's GPUs, driver CUDA and free memory against what its deployments claim (read-only,
        # at once); with the docker runtime, a container of the engine image sees the GPUs (once there).
        checks += resource_checks(spec, self.nodes, child, {name: img.ready for name, img in self.images.items()},
                                  {name: img.tag for name, img in self.images.items()})
        if spec.fabric is not None and spec.fabric.bandwidth_check is not None:
            previous: list = []
            for d in (d for d in spec.deployments if d.ranks_span_nodes):
                model = self.models[d.model]
                # After the image is on every node and the links are up (their message is the
                # clearer one), and on a quiet link: after the model copies and the previous
                # measurement, which would share the link (and the port, on a shared head).
                image = self.images[d.image]
                bandwidth = FabricBandwidth(f"{d.name}-bandwidth", FabricBandwidthArgs(
                    d, [self.nodes[n] for n in d.nodes], spec.fabric, image=image.tag, image_id=image.image_id,
                    index=spec.deployments.index(d),
                    depends_on=[*image.ready.on(*d.nodes), *model.ready.on(*d.nodes),
                                *(s for n in d.nodes for s in links[n].ready.all()), *previous]), child)
                self.bus_gbps[d.name] = bandwidth.bus_gbps
                checks.append(bandwidth)
                previous = bandwidth.ready.all()
        return checks

    @staticmethod
    def _private_key(index: int, node) -> str | None:
        if node.ssh.private_key is None:
            return read_private_key(node)
        try:
            return plain_value(node.ssh.private_key, f"nodes[{index}].ssh.private_key", whole_file=True)
        except ConfigError as err:
            if not pulumi.runtime.is_dry_run():
                raise
            pulumi.log.warn(f"{err} (preview continues; `up` will stop here)")
            return None
