"""The status page's figures, read from Prometheus (promapi.py) for one stack: a state and the
figures of each deployment. Every name it queries is the rules' own: the recorded
series of series.py, the alerts' names of alerts.py, the watchdog's counter of names.py.

One query per series for the whole stack (selected by `stack`), split by deployment or node
here: a page is a dozen small queries whatever the number of deployments. A series missing for a
deployment is None (the page says "no data"); a series its engine does not record at all is
left out (the page says "n/a"). A Prometheus that does not answer still gives a page, which
says so, and every figure is None."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from components import names
from components.config.schema import DeploymentSpec, StackSpec
from components.monitoring.alerts import ENGINE_DOWN, ENGINE_WEDGED, MEMORY_AVAILABLE_BELOW, RESTART_LOOP
from components.monitoring.promapi import Prometheus, PrometheusError
from components.monitoring.series import (DECODE_TOKENS, KV_CACHE_USAGE, NODE_MEM_AVAILABLE,
                                          NODE_MEM_AVAILABLE_RATIO, PROGRESS, REQUESTS_RUNNING, REQUESTS_WAITING,
                                          TTFT_P95, Recorded, engine_sources, matchers)

# The tok/s plot's span, and its number of points: enough for a shape, few enough to stay small.
DEFAULT_MINUTES = 15
PLOT_POINTS = 60
# A plot's point is a sample this recent: Prometheus would otherwise carry a series' last value for
# its 5-minute lookback, and a deployment whose series ended without a staleness marker (a
# Prometheus restart, a backfill) would draw as flat, not as the gap it is. 2 minutes: two
# evaluations at the rules' default 1-minute interval.
PLOT_FRESH_S = 120

# Per deployment, each an instant query of a recorded series.
FIGURES = (DECODE_TOKENS, PROGRESS, TTFT_P95, KV_CACHE_USAGE, REQUESTS_RUNNING, REQUESTS_WAITING)

UP, WEDGED, DOWN, UNKNOWN = "up", "wedged", "down", "no data"


@dataclass(frozen=True)
class NodeMemory:
    node: str
    available_bytes: float | None
    available_ratio: float | None

    @property
    def low(self) -> bool:
        """Under the memory-pressure alert's threshold."""
        return self.available_ratio is not None and self.available_ratio < MEMORY_AVAILABLE_BELOW


@dataclass(frozen=True)
class DeploymentStatus:
    name: str
    engine: str
    nodes: tuple[str, ...]
    state: str
    why: str                                    # what the state was read from, in words
    figures: dict[str, float | None]            # recorded name -> value; absent: the engine lacks it
    tokens: tuple[tuple[float, float], ...]     # the tok/s plot: (unix time, value)
    memory: tuple[NodeMemory, ...]
    restarts: float | None                      # the watchdog's counter, since its start
    restarts_recent: float | None               # its increase over the page's window
    restart_loop: bool

    def figure(self, r: Recorded) -> float | None:
        return self.figures.get(r.name)

    def records(self, r: Recorded) -> bool:
        return r.name in self.figures


@dataclass(frozen=True)
class StackStatus:
    stack: str
    prometheus: str
    at: float
    minutes: float
    deployments: tuple[DeploymentStatus, ...]
    error: str | None = None                    # Prometheus did not answer: why
    counts: dict[str, int] = field(default_factory=dict)


def by(label: str, samples) -> dict[str, float]:
    return {s.labels.get(label, ""): s.value for s in samples}


def state_of(figures: dict[str, float | None], up: float | None, alerts: dict[str, str]) -> tuple[str, str]:
    """The firing alerts first (they held their `for:`), then what the data says now (the alert
    may still be pending, or the rules not loaded), then whether there is any data at all."""
    if alerts.get(ENGINE_DOWN) == "firing":
        return DOWN, f"alert {ENGINE_DOWN} firing"
    if alerts.get(ENGINE_WEDGED) == "firing":
        return WEDGED, f"alert {ENGINE_WEDGED} firing"
    running, progress = figures.get(REQUESTS_RUNNING.name), figures.get(PROGRESS.name)
    if up == 0:
        return DOWN, "its /metrics does not answer"
    if progress == 0 and running:
        return WEDGED, f"no progress while {running:.0f} requests run"
    if up is None and all(v is None for v in figures.values()):
        return UNKNOWN, "Prometheus has no series of it"
    if running == 0:
        return UP, "idle: no request running"
    return UP, "serving" if up is not None else "serving (no up series)"


def gather(prom: Prometheus, stack: str, spec: StackSpec, at: float, minutes: float) -> tuple[DeploymentStatus, ...]:
    where = matchers(stack=stack)
    instant = {r.name: by("deployment", prom.query(f"{r.name}{{{where}}}", at)) for r in FIGURES}
    up = by("deployment", prom.query(f'min by (deployment) (up{{{where},deployment!=""}})', at))
    alerts: dict[str, dict[str, str]] = {}
    engine_alerts = "|".join((ENGINE_DOWN, ENGINE_WEDGED, RESTART_LOOP))
    for s in prom.query(f'ALERTS{{{where},alertname=~"{engine_alerts}"}}', at):
        mine = alerts.setdefault(s.labels.get("deployment", ""), {})
        if mine.get(s.labels["alertname"]) != "firing":     # firing wins over pending
            mine[s.labels["alertname"]] = s.labels.get("alertstate", "")
    restarts_total = f"{names.WATCHDOG_RESTARTS_METRIC}{{{where}}}"
    restarts = by("deployment", prom.query(f"sum by (deployment) ({restarts_total})", at))
    recent = by("deployment", prom.query(f"sum by (deployment) (increase({restarts_total}[{minutes:g}m]))", at))
    memory = by("node", prom.query(f"{NODE_MEM_AVAILABLE.name}{{{where}}}", at))
    ratio = by("node", prom.query(f"{NODE_MEM_AVAILABLE_RATIO.name}{{{where}}}", at))
    start = at - minutes * 60
    tokens = f"{DECODE_TOKENS.name}{{{where}}}"
    fresh = f"{tokens} and (time() - timestamp({tokens})) < {PLOT_FRESH_S}"
    plots = {s.labels.get("deployment", ""): s.points for s in
             prom.query_range(fresh, start, at, max(minutes * 60 / PLOT_POINTS, 1))}

    def status(d: DeploymentSpec) -> DeploymentStatus:
        recorded = engine_sources(d.engine)
        figures = {r.name: instant[r.name].get(d.name) for r in FIGURES if r in recorded}
        state, why = state_of(figures, up.get(d.name), alerts.get(d.name, {}))
        return DeploymentStatus(
            d.name, d.engine, tuple(d.nodes), state, why, figures, plots.get(d.name, ()),
            tuple(NodeMemory(n, memory.get(n), ratio.get(n)) for n in d.nodes),
            restarts.get(d.name), recent.get(d.name), alerts.get(d.name, {}).get(RESTART_LOOP) == "firing")

    return tuple(status(d) for d in spec.deployments)


def unanswered(spec: StackSpec) -> tuple[DeploymentStatus, ...]:
    """Every deployment without a figure: the page of a Prometheus that did not answer."""
    return tuple(DeploymentStatus(d.name, d.engine, tuple(d.nodes), UNKNOWN, "Prometheus did not answer",
                                  {r.name: None for r in FIGURES if r in engine_sources(d.engine)}, (),
                                  tuple(NodeMemory(n, None, None) for n in d.nodes), None, None, False)
                 for d in spec.deployments)


def stack_status(prometheus_url: str, stack: str, spec: StackSpec, minutes: float = DEFAULT_MINUTES,
                 at: float | None = None) -> StackStatus:
    at = time.time() if at is None else at
    try:
        deployments, error = gather(Prometheus(prometheus_url), stack, spec, at, minutes), None
    except PrometheusError as err:
        deployments, error = unanswered(spec), str(err)
    counts = {s: sum(d.state == s for d in deployments) for s in (UP, WEDGED, DOWN, UNKNOWN)}
    return StackStatus(stack, prometheus_url, at, minutes, deployments, error, counts)
