"""Deployment: the engine (components/engines) as systemd units of its runtime (components/runtimes:
a container, or a venv process) — one node, over a Ray cluster, or the engine's own multi-node
launch — and the health gate that sends a real chat completion. Its endpoint is a stack output."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import pulumi

from components import names
from components.config.crosscheck import rank_watch_ranks
from components.config.schema import DeploymentSpec, FabricSpec
from components.engines import engine_of
from components.facts import EndpointAnswers
from components.launches import Rank
from components.platforms import platform
from components.resources.api import DeploymentApi
from components.resources.benchmark import benchmark_step
from components.resources.benchmark import figures as benchmark_figures
from components.resources.cluster import RayCluster
from components.resources.component import Component, Ready
from components.resources.fabric import fabric_environment
from components.resources.node import Node
from components.resources.unit import DROP_PAGE_CACHE, SystemdUnit, SystemdUnitArgs, env_file_text
from components.resources.watchdog import (
    RankWatch,
    RankWatchArgs,
    Watchdog,
    WatchdogArgs,
    rank_watch_component,
    watchdog_name,
)
from components.runtimes import RankStart, Runtime
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run
from components.steps.render import digest, render


@dataclass(frozen=True)
class DeploymentArgs:
    """nodes: the head first; runtime: the image entry it runs (components/runtimes); ranks: every
    rank with its node and command line (its launch's, computed once by the stack: its engine
    probe checks the same lists); cluster: its Ray cluster (a Ray launch); api_key: the engine's
    key (a secret), None without one."""
    spec: DeploymentSpec
    nodes: Sequence[Node]
    runtime: Runtime
    ranks: Sequence[Rank]
    model_cache_dir: str
    fabric: FabricSpec | None
    state_dir: str
    cluster: RayCluster | None = None
    api_key: pulumi.Output[str] | None = None
    depends_on: Sequence[pulumi.Resource] = ()
    # Per node, the placement of the model cache (components/resources/model.py): a new one on any
    # of the deployment's nodes restarts its units.
    model_placed: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


class Deployment(Component):
    """ready: its health gate passed on the head (the benchmark and the watchdog come after)."""
    TYPE = types.DEPLOYMENT

    def __init__(self, name: str, args: DeploymentArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        spec, nodes, runtime, fabric, cluster = args.spec, args.nodes, args.runtime, args.fabric, args.cluster
        api_key, model_cache_dir, state_dir = args.api_key, args.model_cache_dir, args.state_dir
        self.spec = spec
        engine = engine_of(spec)
        head = nodes[0]
        unit_name = names.engine_unit(spec.name)
        container = names.engine_container(spec.name)
        env_file = names.engine_env_file(spec.name) if api_key is not None else None
        key_var = engine.api_key_var
        env_text = env_file_text({key_var: api_key}) if api_key is not None else None
        head_fabric = str(head.spec.fabric_address) if head.spec.fabric_address else None

        # One engine loads the model on all its nodes (ranks, Ray workers): a cache placed again on
        # any of them restarts every unit of it.
        placed = [args.model_placed[n.name] for n in nodes if n.name in args.model_placed]
        by_name = {n.name: n for n in nodes}
        ranks = list(args.ranks)

        def unit_for(rank: Rank, deps: Sequence[pulumi.Resource],
                     peers_started: Sequence[pulumi.Input[str]] = ()) -> SystemdUnit:
            node = by_name[rank.node]
            env = {**fabric_environment(fabric, node.spec), "HF_HUB_OFFLINE": "1", **engine.env(spec), **spec.env}
            mounts = [f"{model_cache_dir}:{model_cache_dir}:ro"]
            after, binds = [], []
            if cluster is not None and spec.executor == "ray":
                env["RAY_ADDRESS"] = cluster.address
                mounts.append(f"{cluster.tmp_dir}:/tmp/ray")
                after = binds = [cluster.head_unit_name]
            pre_start = [DROP_PAGE_CACHE] if spec.drop_page_cache else []
            if cluster is not None:
                # After a reboot the units start together: the engine waits for its Ray head.
                pre_start.append(cluster.wait_for_head)
            start = RankStart(
                component=f"Deployment {spec.name}", description=f"blackwell-serving {spec.engine} {spec.name}"
                + (f" (rank {rank.rank})" if len(ranks) > 1 else ""), container=container,
                command=list(rank.argv), environment=env, env_file=env_file,
                mounts=mounts, after=after, binds_to=binds, restart=engine.restart(spec), pre_start=pre_start)
            return SystemdUnit(f"{name}-{node.name}",
                               SystemdUnitArgs(node, unit_name, runtime.rank_unit_text(spec, fabric, start),
                                               env_file=env_file, env_text=env_text, depends_on=deps,
                                               triggers=[runtime.image_id, *placed, *peers_started],
                                               container=runtime.rank_container(container), image=runtime.tag,
                                               release=release_check(spec, node)),
                               pulumi.ResourceOptions(parent=self))

        deps = [*args.depends_on, *(cluster.ready.all() if cluster is not None else [])]
        # The engine spans the other ranks' or the Ray nodes' processes: a start of any of them done
        # by `up` (a repair on one node) leaves the engine's group broken, so it restarts rank 0
        # after it (a trigger of the head's unit), and the group forms again.
        cluster_started = list(cluster.started) if cluster is not None else []
        # With several ranks (the engine's own launch): the other ranks first (vLLM's --headless),
        # then rank 0 on the head, which answers the API. A rank that dies takes the engine with
        # it: the head's unit (or the watchdog, when the head still answers /health) restarts
        # rank 0, and the other ranks, which then lose their peer and exit, restart by Restart=
        # and meet it again.
        workers = [unit_for(r, deps) for r in ranks[1:]]
        self.units = [unit_for(ranks[0], [*deps, *(s for w in workers for s in w.ready.all())],
                               [*cluster_started, *(w.started for w in workers)]), *workers]

        address = "127.0.0.1" if str(spec.bind) == "0.0.0.0" else str(spec.bind)
        request = {"model": spec.served_name, "max_tokens": spec.health.max_tokens, "temperature": 0,
                   "messages": [{"role": "user", "content": spec.health.prompt}]}
        # How the gate and the watchdog ask the engine for a real completion.
        completion = dict(address=address, port=spec.port, env_file=env_file, key_var=key_var,
                          request_json=json.dumps(request))
        self.health = run(
            f"{name}-health", head, parent=self, depends_on=[s for u in self.units for s in u.ready.all()],
            step=StepInfo(head.name, "verify", do=f"Health gate: a real chat completion from {spec.name}",
                          undo=f"Drop the health gate of {spec.name}"),
            create=render("scripts/health-gate.sh.j2", deployment=spec.name, served_name=spec.served_name,
                          unit=unit_name, timeout_s=spec.health.timeout_s, restarts=spec.health.restarts,
                          engine_digest=digest(*(u.unit_text for u in self.units)),
                          # Then the memory ledger's measurement (components/sizing/ledger.py reads it).
                          kv_marker=engine.kv_report_marker, container=runtime.rank_container(container),
                          **completion),
            expect=EndpointAnswers(head.name, f"http://{_url_host(address)}:{spec.port}{engine.health_path}"),
            # Checked again after every start an install step does (also of a Ray unit the engine
            # is bound to), not only when a unit's text changes.
            triggers=[*(cluster.started if cluster is not None else []), *(u.started for u in self.units)],
            # A failed swap's rollback asks the previous deployment again (components/steps/rollback.py).
            undo="check")
        # The benchmark after the gate (components/resources/benchmark.py): its figures, the output `benchmark`.
        self.benchmark = benchmark_step(
            spec, head, parent=self, address=address, engine_digest=digest(*(u.unit_text for u in self.units)),
            env_file=env_file, key_var=key_var, image=runtime.tag, venv_python=runtime.python,
            depends_on=[self.health])
        self.figures = benchmark_figures(self.benchmark.stdout) if self.benchmark else None
        if spec.watchdog.enabled:
            # The Ray head first (the engine is bound to it and stops with it), then the engine.
            # Armed after the benchmark, whose load would otherwise slow its checks.
            order = [*([cluster.head_unit_name] if cluster is not None else []), unit_name]
            armed_after = [self.health, *([self.benchmark] if self.benchmark else [])]
            self.watchdog = Watchdog(watchdog_name(spec.name),
                                     WatchdogArgs(spec, head, engine_unit=unit_name, restart_units=order,
                                                  completion=completion, state_dir=state_dir, depends_on=armed_after),
                                     pulumi.ResourceOptions(parent=self))
        # Each rank past the head whose engine needs it watches its connections to the head.
        self.rank_watches = [
            RankWatch(rank_watch_component(spec.name, rank),
                      RankWatchArgs(spec, node, rank, engine_unit=unit_name,
                                    container=runtime.rank_container(container), head_address=str(head_fabric),
                                    state_dir=state_dir, depends_on=[self.health]),
                      pulumi.ResourceOptions(parent=self))
            for rank, node in enumerate(nodes) if rank in rank_watch_ranks(spec)]
        self.endpoint = f"http://{head.spec.host}:{spec.port}/v1"
        self.api = DeploymentApi.of(spec, head.spec, args.api_key)
        self.sample = self.health.stdout.apply(_completion_text)
        self.ready = Ready.of([(head.name, self.health)])
        self.register_outputs({"endpoint": self.endpoint, "sample": self.sample})


def release_check(spec, node: Node):
    """The memory check of a swap on this node (MemoryReleaseSpec), or None when it is off there."""
    enabled = spec.memory_release.enabled
    if enabled is None:
        enabled = platform(node.spec.gpu.kind).checks_memory_release
    return spec.memory_release if enabled else None


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _completion_text(stdout: str | None) -> str:
    for line in reversed((stdout or "").splitlines()):
        try:
            reply = json.loads(line)
            return reply["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            continue
    return ""
