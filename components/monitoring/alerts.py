"""The alerts of a deployment and of a node, each over `up`, a recorded series
(components/monitoring/series.py) or the watchdog's restart counter, with the time it waits
before it fires. docs/monitoring.md lists them; tests/unit/monitoring shows each one firing at
its minute and staying quiet where it must."""

from __future__ import annotations

import math

from components import names
from components.config.monitoring import AlertWindows
from components.config.schema import DeploymentSpec, NodeSpec, StackSpec
from components.monitoring.series import NODE_MEM_AVAILABLE_RATIO, PROGRESS, RATE_WINDOW, REQUESTS_RUNNING, matchers
from components.platforms import platform

# How long each condition holds before its alert fires: the stack's monitoring.alerts (config/monitoring.py).
# Engine down: no scrape answered (a crash, a stop, or a load still under way: an engine serves no
# API, and so no /metrics, while its weights load, so a restart of a large model raises it too).
# Wedged: no progress while requests run, after the rate window saw none; the watchdog
# (components/resources/watchdog.py) restarts such an engine within its failures × interval, so
# this says the restart did not help, or the watchdog is off.
# Unified memory (DGX Spark's GB10; the lab's CPU engines): the model, the KV cache and the OS
# share MemTotal, so little MemAvailable means the next allocation swaps or meets the OOM killer.
MEMORY_AVAILABLE_BELOW = 0.10
# Watchdog restarts that make a loop: the first did not hold, nor did the next.
RESTART_LOOP_RESTARTS = 3

# The alerts' names: the rules and the status page (status_page.py, which reads ALERTS) share them.
ENGINE_DOWN = "BwsEngineDown"
ENGINE_WEDGED = "BwsEngineWedged"
RESTART_LOOP = "BwsRestartLoop"
NODE_MEMORY_PRESSURE = "BwsNodeMemoryPressure"


def windows_of(spec: StackSpec) -> AlertWindows:
    return spec.monitoring.alerts if spec.monitoring is not None else AlertWindows()


def duration(seconds: int) -> str:
    """Prometheus's duration: 5m, 90s."""
    return f"{seconds // 60}m" if seconds % 60 == 0 and seconds else f"{seconds}s"


def restart_loop_minutes(d: DeploymentSpec) -> int:
    """The window in which RESTART_LOOP_RESTARTS restarts are a loop: that many of the watchdog's
    slowest cycles, each the engine's load (the grace it is given: the health gate's timeout) and
    then `failures` checks, each up to its interval and its timeout."""
    w = d.watchdog
    cycle_s = d.health.timeout_s + w.failures * (w.interval_s + w.timeout_s)
    return math.ceil(RESTART_LOOP_RESTARTS * cycle_s / 60)


def deployment_alerts(d: DeploymentSpec, labels: dict[str, str],
                      windows: AlertWindows = AlertWindows()) -> list[dict]:
    """`labels`: the deployment's, {stack, deployment}."""
    where, head = matchers(**labels), d.nodes[0]
    down_for, wedged_for = duration(windows.engine_down_s), duration(windows.wedged_s)
    journal = f"journalctl -u {names.watchdog_units(d.name)[0]} on {head}"
    alerts = [
        alert(labels, ENGINE_DOWN, f"up{{{where}}} == 0", down_for, "critical",
              f"{d.name} ({d.engine} on {head}, port {d.port}) answered no scrape for {down_for}",
              f"The engine is down, stopped, or still loading its weights. See {journal} and the engine's unit."),
        alert(labels, ENGINE_WEDGED,
              f"{PROGRESS.name}{{{where}}} == 0 and {REQUESTS_RUNNING.name}{{{where}}} > 0", wedged_for, "critical",
              f"{d.name} ({d.engine} on {head}) runs requests but makes no progress",
              f"{PROGRESS.name} was 0 over its {RATE_WINDOW} window and stayed so for {wedged_for} while "
              f"requests ran: its process is alive and does no work. See {journal}."),
    ]
    if d.watchdog.enabled:
        minutes = restart_loop_minutes(d)
        alerts.append(alert(
            labels, RESTART_LOOP,
            f"increase({names.WATCHDOG_RESTARTS_METRIC}{{{where}}}[{minutes}m]) >= {RESTART_LOOP_RESTARTS}", None,
            "critical", f"{d.name} ({d.engine} on {head}): {RESTART_LOOP_RESTARTS} watchdog restarts in {minutes} minutes",
            f"Each restart wedged or failed again. See {journal}."))
    return alerts


def node_alerts(node: NodeSpec, labels: dict[str, str], windows: AlertWindows = AlertWindows()) -> list[dict]:
    """`labels`: the node's, {stack, node}."""
    if not platform(node.gpu.kind).unified_memory:
        return []   # the GPUs' own memory holds the model: the host's is not what runs out first
    where = matchers(**labels)
    percent, held = round(MEMORY_AVAILABLE_BELOW * 100), duration(windows.memory_pressure_s)
    return [alert(
        labels, NODE_MEMORY_PRESSURE, f"{NODE_MEM_AVAILABLE_RATIO.name}{{{where}}} < {MEMORY_AVAILABLE_BELOW}",
        held, "warning", f"{node.name} ({node.gpu.kind}, unified memory): under {percent}% of its memory available",
        f"MemAvailable below {percent}% of MemTotal for {held}: the next allocation of an engine, "
        f"or of anything else on {node.name}, swaps or meets the OOM killer.")]


def alert(labels: dict[str, str], name: str, expr: str, wait: str | None, severity: str, summary: str,
          description: str) -> dict:
    """`labels` again as the rule's own: the same alert of two deployments then differs in its
    text as well (promtool's duplicate-rules lint reads no selector)."""
    rule = {"alert": name, "expr": expr}
    if wait:
        rule["for"] = wait
    return {**rule, "labels": {**labels, "severity": severity},
            "annotations": {"summary": summary, "description": description}}
