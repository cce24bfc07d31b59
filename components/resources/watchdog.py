"""Watchdog: after a deployment passed its health gate, a systemd timer on its head sends it a
real chat completion every interval and, after a number of failures in a row, restarts its
units in order (the Ray head first, then the engine) — what systemd's own restart policy cannot
see: an engine whose process is alive but answers nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pulumi

from components import names
from components.config.schema import DeploymentSpec
from components.engines import ENGINES
from components.facts import UnitRunning
from components.resources.component import Component, Ready
from components.resources.node import Node
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run
from components.steps.render import render

# The watchdog's own state on the node (failures in a row, the start that answered, the stop it
# told of): runtime only, gone with a reboot.
RUN_DIR = names.WATCHDOG_RUN_DIR
# How long one read of the engine's /metrics may take (the busy check reads it before and after
# its completion): a loaded engine's exposition takes seconds; a hung one answers never.
METRICS_TIMEOUT_S = 10


def watchdog_name(deployment: str) -> str:
    return f"{deployment}-watchdog"


@dataclass(frozen=True)
class WatchdogArgs:
    """completion: how it asks the engine for a real completion (the health gate's values);
    restart_units: what it restarts, in order."""
    spec: DeploymentSpec
    head: Node
    engine_unit: str
    restart_units: Sequence[str]
    completion: dict
    state_dir: str
    depends_on: Sequence[pulumi.Resource] = ()


class Watchdog(Component):
    TYPE = types.WATCHDOG

    def __init__(self, name: str, args: WatchdogArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        spec, head, engine_unit, state_dir = args.spec, args.head, args.engine_unit, args.state_dir
        w = spec.watchdog
        service, timer = names.watchdog_units(spec.name)
        script_dir = f"{state_dir}/watchdog"
        script_path = f"{script_dir}/{spec.name}.sh"
        values = dict(deployment=spec.name, timer=timer, service=service, interval_s=w.interval_s,
                     failures=w.failures, restart_units=list(args.restart_units))
        engine = ENGINES[spec.engine]
        # A busy engine is not a wedged one: a check that got no answer while the engine's work
        # counters moved counts no failure (an engine whose names are not mapped: every miss counts).
        script = render("scripts/watchdog.sh.j2", engine_unit=engine_unit, timeout_s=w.timeout_s,
                        grace_s=spec.health.timeout_s, run_dir=RUN_DIR,
                        progress_counters=list(engine.progress_counters), metrics_path=engine.metrics_path,
                        metrics_timeout_s=min(w.timeout_s, METRICS_TIMEOUT_S),
                        **args.completion, **values)
        timer_text, units, paths = timer_units(values, engine_unit=engine_unit, script_dir=script_dir,
                                               script_path=script_path, timeout_s=w.timeout_s)
        self.command = run(
            f"{name}-timer", head, parent=self, depends_on=args.depends_on, undo="remove",
            step=StepInfo(head.name, "verify",
                          do=f"Arm the watchdog of {spec.name}: a completion every {w.interval_s} s, "
                             f"a restart after {w.failures} failures in a row",
                          undo=f"Disarm the watchdog of {spec.name} on {head.name}", priority="normal"),
            create=render("scripts/install-watchdog.sh.j2", script_text=script, units=units, **paths, **values),
            delete=render("scripts/remove-watchdog.sh.j2", **paths, **values),
            expect=UnitRunning(head.name, timer, timer_text))
        self.ready = Ready.of([(head.name, self.command)])
        self.register_outputs({"timer": timer, "node": head.name})


def timer_units(values: dict, *, engine_unit: str, script_dir: str, script_path: str,
                timeout_s: int) -> tuple[str, list[tuple[str, str]], dict]:
    """A watch's timer text, its (service, timer) units with their texts, and the paths its
    install script writes: the watchdog's and the rank watch's are the same shape."""
    timer_text = render("units/watchdog.timer.j2", **values)
    units = [(values["service"], render("units/watchdog.service.j2", engine_unit=engine_unit, script=script_path,
                                       timeout_s=timeout_s, **values)),
             (values["timer"], timer_text)]
    return timer_text, units, dict(script_dir=script_dir, script_path=script_path)


# How long a new start of a rank may go without a connection to its listening head before the
# rank watch judges it joined a head that is gone: its imports and first connect (about 40 s on
# the lab's loaded 2 cores), with room to spare.
RANK_JOIN_GRACE_S = 90


def rank_watch_component(deployment: str, rank: int) -> str:
    return f"{names.rank_watch_name(deployment, rank)}-watch"


@dataclass(frozen=True)
class RankWatchArgs:
    """container: the rank's container (None: a plain process); head_address: the head's fabric
    address, whose connections it watches."""
    spec: DeploymentSpec
    node: Node
    rank: int
    engine_unit: str
    container: str | None
    head_address: str
    state_dir: str
    depends_on: Sequence[pulumi.Resource] = ()


class RankWatch(Component):
    """On a node of a native deployment other than the head: a timer that restarts the rank's unit
    once it has joined its head and then lost every connection to it (the head restarted alone:
    the rank would wait on its dead peers forever, and the new head for it).
    templates/scripts/rank-watch.sh.j2 says how it tells."""

    TYPE = types.RANK_WATCH

    def __init__(self, name: str, args: RankWatchArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        spec, node, rank, engine_unit = args.spec, args.node, args.rank, args.engine_unit
        head_address, state_dir = args.head_address, args.state_dir
        watch = names.rank_watch_name(spec.name, rank)
        w = spec.watchdog
        service, timer = names.rank_watch_units(spec.name, rank)
        script_dir = f"{state_dir}/watchdog"
        script_path = f"{script_dir}/{watch}.sh"
        values = dict(deployment=watch, timer=timer, service=service, interval_s=w.interval_s,
                     failures=w.failures, restart_units=[engine_unit])
        script = render("scripts/rank-watch.sh.j2", engine_unit=engine_unit, container=args.container,
                        head_address=head_address, head_port=spec.dist_port, join_grace_s=RANK_JOIN_GRACE_S,
                        **values)
        timer_text, units, paths = timer_units(values, engine_unit=engine_unit, script_dir=script_dir,
                                               script_path=script_path, timeout_s=30)
        armed = (f"armed: every {w.interval_s} s, {w.failures} checks in a row without a connection to the head "
                 f"{head_address} (once joined) restart {engine_unit}")
        self.command = run(
            f"{name}-timer", node, parent=self, depends_on=args.depends_on, undo="remove",
            step=StepInfo(node.name, "verify",
                          do=f"Arm the rank watch of {spec.name} on {node.name} (rank {rank}): a restart when "
                             f"its head restarted without it",
                          undo=f"Disarm the rank watch of {spec.name} on {node.name}", priority="normal"),
            create=render("scripts/install-watchdog.sh.j2", script_text=script, units=units, armed=armed,
                          **paths, **values),
            delete=render("scripts/remove-watchdog.sh.j2", joined_state=True, **paths, **values),
            expect=UnitRunning(node.name, timer, timer_text))
        self.ready = Ready.of([(node.name, self.command)])
        self.register_outputs({"timer": timer, "node": node.name})
