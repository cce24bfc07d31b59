"""Thirty minutes of the lab stack as its Prometheus would hold them, written as OpenMetrics and
turned into a TSDB block by `promtool tsdb create-blocks-from openmetrics`: the recorded series
(named from series.py), `up`, ALERTS (alerts.py's names) and the watchdog's counter, every 15 s.

- tiny serves: its tok/s rises and falls (peak 42.5, now 17.5); TTFT p95 488 ms; KV cache 75%.
- tiny-b is wedged: no progress from minute 20 while 2 requests run; BwsEngineWedged pending
  from minute 22, firing from minute 27; the watchdog restarted it at minutes 12 and 17.
- tiny-gguf is down: its scrapes fail from minute 25 (up = 0; BwsEngineDown pending, not yet
  firing), so its recorded series end 5 min 15 s before the end: past the 5-minute lookback.
- lab-1 has 9.8 GiB of 16 available (61%); lab-2 1.2 GiB (7.5%: under the alert's 10%)."""

from __future__ import annotations

import math
from pathlib import Path

from components import names
from components.monitoring.alerts import ENGINE_DOWN, ENGINE_WEDGED
from components.monitoring.series import (DECODE_TOKENS, KV_CACHE_USAGE, NODE_MEM_AVAILABLE, NODE_MEM_AVAILABLE_RATIO,
                                          PROGRESS, REQUESTS_RUNNING, REQUESTS_WAITING, TTFT_P95, matchers)
from tests.unit.monitoring.exposition import target_labels
from tests.unit.monitoring.promtool import promtool

STEP_S = 15
STEPS = 120                 # 30 minutes
GIB = 2 ** 30


def minute(i: int) -> float:
    return i * STEP_S / 60


def lab_series() -> dict[str, dict[str, list[float | None]]]:
    """name -> {label selector -> a value per step (None: no sample)}."""
    steps = range(STEPS + 1)

    def until(i_end: int, f) -> list[float | None]:
        return [f(i) if i < i_end else None for i in steps]

    def each(f) -> list[float]:
        return [f(i) for i in steps]

    tiny, tiny_b, gguf = (matchers(stack="lab", deployment=d) for d in ("tiny", "tiny-b", "tiny-gguf"))
    tiny_tok = each(lambda i: 30 + 12.5 * math.sin(math.pi * i / 80))     # peak 42.5 at minute 10, now 17.5
    b_tok = each(lambda i: 8 + 2 * math.cos(i / 7) if minute(i) < 20 else 0.0)
    gguf_gone = 99          # its last scrape at step 99; up = 0 from step 100 (minute 25)
    gguf_tok = until(gguf_gone, lambda i: 5 + math.sin(i / 5))
    series = {
        DECODE_TOKENS.name: {tiny: tiny_tok, tiny_b: b_tok, gguf: gguf_tok},
        PROGRESS.name: {tiny: [v * 2.3 for v in tiny_tok], tiny_b: [v * 2.3 for v in b_tok],
                        gguf: until(gguf_gone, lambda i: 12.0)},
        TTFT_P95.name: {tiny: each(lambda i: 0.4875), tiny_b: each(lambda i: 0.9 if minute(i) < 20 else math.nan)},
        KV_CACHE_USAGE.name: {tiny: each(lambda i: 0.75), tiny_b: each(lambda i: 0.31)},
        REQUESTS_RUNNING.name: {tiny: each(lambda i: 3), tiny_b: each(lambda i: 2), gguf: until(gguf_gone, lambda i: 1)},
        REQUESTS_WAITING.name: {tiny: each(lambda i: 1), tiny_b: each(lambda i: 4), gguf: until(gguf_gone, lambda i: 0)},
        "up": {matchers(**target_labels("lab", d)): each(lambda i, d=d: 0 if d == "tiny-gguf" and i > gguf_gone else 1)
               for d in ("tiny", "tiny-b", "tiny-gguf")},
        "ALERTS": {
            matchers(alertname=ENGINE_WEDGED, alertstate="pending", severity="critical", stack="lab",
                     deployment="tiny-b"): [1 if 22 <= minute(i) < 27 else None for i in steps],
            matchers(alertname=ENGINE_WEDGED, alertstate="firing", severity="critical", stack="lab",
                     deployment="tiny-b"): [1 if minute(i) >= 27 else None for i in steps],
            matchers(alertname=ENGINE_DOWN, alertstate="pending", severity="critical", stack="lab",
                     deployment="tiny-gguf", **{k: v for k, v in target_labels("lab", "tiny-gguf").items()
                                                if k not in ("stack", "deployment")}):
                [1 if i > gguf_gone + 1 else None for i in steps],
        },
        names.WATCHDOG_RESTARTS_METRIC: {
            matchers(job="node", instance="198.18.0.11:9100", stack="lab", node="lab-1", deployment="tiny"): each(lambda i: 0),
            matchers(job="node", instance="198.18.0.12:9100", stack="lab", node="lab-2", deployment="tiny-b"):
                each(lambda i: 0 if minute(i) < 12 else 1 if minute(i) < 17 else 2),
            matchers(job="node", instance="198.18.0.11:9100", stack="lab", node="lab-1", deployment="tiny-gguf"):
                each(lambda i: 0),
        },
        NODE_MEM_AVAILABLE.name: {matchers(stack="lab", node="lab-1"): each(lambda i: 9.8 * GIB),
                                  matchers(stack="lab", node="lab-2"): each(lambda i: 1.2 * GIB)},
        NODE_MEM_AVAILABLE_RATIO.name: {matchers(stack="lab", node="lab-1"): each(lambda i: 9.8 / 16),
                                        matchers(stack="lab", node="lab-2"): each(lambda i: 0.075)},
    }
    return series


def openmetrics(end: int) -> str:
    """The series ending at `end` (unix seconds): one family after another, each series' samples
    oldest first, as the format requires."""
    lines = []
    for name, by_labels in lab_series().items():
        lines.append(f"# TYPE {name} unknown")
        for labels, values in by_labels.items():
            for i, v in enumerate(values):
                if v is not None:
                    lines.append(f"{name}{{{labels}}} {'NaN' if math.isnan(v) else repr(float(v))} "
                                 f"{end - (STEPS - i) * STEP_S}")
    return "\n".join([*lines, "# EOF"]) + "\n"


def backfill(directory: Path, end: int) -> Path:
    """A TSDB directory holding the series, made by promtool."""
    source, tsdb = directory / "lab.om", directory / "tsdb"
    source.write_text(openmetrics(end))
    result = promtool("tsdb", "create-blocks-from", "openmetrics", str(source), str(tsdb))
    assert result.returncode == 0, result.stdout + result.stderr
    return tsdb
