"""Monitoring on the nodes: Prometheus on the stack's `monitoring.node`, a node_exporter on every
node, each from its Debian package, run by a unit of ours (components/resources/unit.py's
SystemdUnit: installed, restarted only when its text changed, watched for drift, removed on
destroy). The packages' own units stay masked: ours choose the flags, the files and the ports.

Per node, in order: the package (installed with apt when missing, recorded, purged on destroy
only then: templates/scripts/install-package.sh.j2), then the unit. On Prometheus's node also its
configuration and the stack's rules (scrape.py, rules.py: checked by promtool, a step of their
own whose digest the unit's text names, so a new target or rule restarts Prometheus alone), then
a gate: Prometheus answers ready.

node_exporter reads the watchdogs' restart counters in names.TEXTFILE_DIR and systemd's units,
with their restart counts (node_systemd_service_restart_total: a crash loop systemd itself
restarts, which the watchdog's counter does not see)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import pulumi

from components import names
from components.config.schema import StackSpec
from components.facts import EndpointAnswers
from components.monitoring.rules import rules_text
from components.monitoring.scrape import KEYS_DIR, prometheus_config, scrape_keys
from components.resources.component import Component, Ready
from components.resources.node import Node
from components.resources.unit import SystemdUnit, SystemdUnitArgs, env_file_text
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run, started
from components.steps.render import digest, render
from components.steps.secrets import resolve

PROMETHEUS_PACKAGE = "prometheus"
EXPORTER_PACKAGE = "prometheus-node-exporter"
# Each package's own units, masked while it is ours (Debian's names).
OWN_UNITS = {PROMETHEUS_PACKAGE: ["prometheus.service"], EXPORTER_PACKAGE: ["prometheus-node-exporter.service"]}
USER = "prometheus"          # made by both packages
PROMETHEUS = "/usr/bin/prometheus"
EXPORTER = "/usr/bin/prometheus-node-exporter"
PROGRAMS = (PROMETHEUS, EXPORTER)
CONFIG_FILE = f"{names.PROMETHEUS_CONFIG_DIR}/prometheus.yml"
RULES_FILE = f"{names.PROMETHEUS_CONFIG_DIR}/rules.yml"
READY_TIMEOUT_S = 120


def exporter_argv(port: int) -> list[str]:
    return [EXPORTER, f"--web.listen-address=:{port}",
            f"--collector.textfile.directory={names.TEXTFILE_DIR}",
            "--collector.systemd", "--collector.systemd.enable-restarts-metrics"]


def prometheus_argv(spec: StackSpec) -> list[str]:
    m = spec.monitoring
    return [PROMETHEUS, f"--config.file={CONFIG_FILE}", f"--storage.tsdb.path={names.PROMETHEUS_DATA_DIR}",
            f"--storage.tsdb.retention.time={m.retention_days}d", f"--web.listen-address={m.bind}:{m.port}"]


def unit_text(description: str, argv: list[str], config_digest: str | None = None) -> str:
    return render("units/daemon.service.j2", component="Monitoring", description=description, user=USER,
                  command=argv, config_digest=config_digest)


@dataclass(frozen=True)
class MonitoringArgs:
    """stack: the stack's name (every target's `stack` label); gates: per node, what anything of
    ours there waits for (the preflight checks, the retirements)."""
    spec: StackSpec
    stack: str
    nodes: Mapping[str, Node]
    gates: Mapping[str, Sequence[pulumi.Resource]]


class Monitoring(Component):
    """ready: Prometheus answers, and every node's exporter runs."""
    TYPE = types.MONITORING

    def __init__(self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        spec, m = args.spec, args.spec.monitoring
        exporters = {}
        for n, node in args.nodes.items():
            package = self._package(name, node, EXPORTER_PACKAGE, args.gates.get(n, ()))
            exporters[n] = SystemdUnit(f"{name}-{n}-node-exporter", SystemdUnitArgs(
                node, names.NODE_EXPORTER_UNIT, unit_text("node_exporter (blackwell-serving)",
                                                          exporter_argv(m.exporter_port)),
                step=StepInfo(n, "serve", do=f"Install and start node_exporter ({names.NODE_EXPORTER_UNIT}) on {n}",
                              undo=f"Stop and remove node_exporter from {n}"),
                depends_on=[package]), pulumi.ResourceOptions(parent=self))
        node = args.nodes[m.node]
        # After the exporter's package: one apt at a time on a node.
        package = self._package(name, node, PROMETHEUS_PACKAGE, [*exporters[m.node].ready.all()])
        self.config_text = prometheus_config(args.stack, spec, RULES_FILE)
        self.rules_text = rules_text(args.stack, spec)
        paths = dict(config_dir=names.PROMETHEUS_CONFIG_DIR, data_dir=names.PROMETHEUS_DATA_DIR)
        # Before the configuration: promtool refuses one that names a key file not there.
        keys = self._keys(name, node, spec, package)
        config = run(f"{name}-{m.node}-prometheus-config", node, parent=self, depends_on=[package, *keys],
                     step=StepInfo(m.node, "serve", do=f"Write Prometheus's targets and the stack's rules on {m.node}",
                                   redo=f"Rewrite Prometheus's targets and rules on {m.node} (then it restarts)",
                                   undo=f"Remove Prometheus's configuration and samples from {m.node}"),
                     create=render("scripts/install-prometheus-config.sh.j2", config_text=self.config_text,
                                   rules_text=self.rules_text, config_file=CONFIG_FILE, rules_file=RULES_FILE, **paths),
                     delete=render("scripts/remove-prometheus-config.sh.j2", **paths))
        text = unit_text(f"Prometheus (blackwell-serving) on port {m.port}", prometheus_argv(spec),
                         digest(self.config_text, self.rules_text))
        self.prometheus = SystemdUnit(f"{name}-{m.node}-prometheus", SystemdUnitArgs(
            node, names.PROMETHEUS_UNIT, text,
            step=StepInfo(m.node, "serve", do=f"Install and start Prometheus ({names.PROMETHEUS_UNIT}) on {m.node}",
                          redo=f"Rewrite {names.PROMETHEUS_UNIT} on {m.node} and restart it",
                          undo=f"Stop and remove Prometheus from {m.node}"),
            depends_on=[config]), pulumi.ResourceOptions(parent=self))
        address = "127.0.0.1" if str(m.bind) == "0.0.0.0" else str(m.bind)
        url = f"http://{address}:{m.port}/-/ready"
        gate = run(f"{name}-{m.node}-prometheus-ready", node, parent=self, depends_on=self.prometheus.ready.all(),
                   step=StepInfo(m.node, "verify", do=f"Health gate: Prometheus answers ready on {m.node}",
                                 undo="Drop Prometheus's health gate", priority="normal"),
                   create=render("scripts/prometheus-ready.sh.j2", url=url, unit=names.PROMETHEUS_UNIT,
                                 timeout_s=READY_TIMEOUT_S),
                   triggers=[self.prometheus.started], expect=EndpointAnswers(m.node, url))
        self.url = f"http://{node.spec.host}:{m.port}"
        self.ready = Ready.of([*((n, s) for e in exporters.values() for n, s in e.ready.pairs()), (m.node, gate)])
        self.register_outputs({"prometheus": self.url})

    def _keys(self, name: str, node: Node, spec: StackSpec, package: pulumi.Resource) -> list[pulumi.Resource]:
        """The step that writes the keys Prometheus scrapes with (scrape.py scrape_keys) from its
        secret stdin; none when no target needs one."""
        keys = scrape_keys(spec)
        if not keys:
            return []
        values = {job: resolve(ref, path) for job, (ref, path) in keys.items()}
        # JOB=KEY lines, a secret, each key refused if it holds a newline: an env file's form.
        text = env_file_text(values)
        step = StepInfo(node.name, "serve", do=f"Write the keys Prometheus scrapes with on {node.name}",
                        redo=f"Rewrite the keys Prometheus scrapes with on {node.name}",
                        undo=f"Remove the keys Prometheus scraped with from {node.name}")
        return [run(f"{name}-{node.name}-prometheus-keys", node, parent=self, depends_on=[package], step=step,
                    create=render("scripts/install-scrape-keys.sh.j2", keys_dir=KEYS_DIR),
                    delete=render("scripts/remove-scrape-keys.sh.j2", keys_dir=KEYS_DIR), stdin=text)]

    def _package(self, name: str, node: Node, package: str, depends_on: Sequence[pulumi.Resource]):
        values = dict(package=package, own_units=OWN_UNITS[package])
        step = StepInfo(node.name, "serve", do=f"Install the Debian package {package} on {node.name} when missing",
                        undo=f"Remove the Debian package {package} from {node.name} if we installed it")
        return run(f"{name}-{node.name}-{package}-package", node, parent=self, depends_on=depends_on, step=step,
                   create=render("scripts/install-package.sh.j2", **values),
                   delete=render("scripts/remove-package.sh.j2", **values))


def monitoring_for(spec: StackSpec, stack: str, nodes: Mapping[str, Node],
                   gates: Mapping[str, Sequence[pulumi.Resource]], opts: pulumi.ResourceOptions) -> Monitoring | None:
    """The stack's monitoring (None without `monitoring:`)."""
    if spec.monitoring is None:
        return None
    return Monitoring("monitoring", MonitoringArgs(spec, stack, nodes, gates), opts)
