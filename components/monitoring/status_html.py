"""The status page as one self-contained HTML file: inline CSS, inline SVG plots, no JavaScript and
nothing fetched, so it opens from disk, from a mail, or behind any web server. A row per
deployment; its state badge, in colour and in words, comes first, as that is what a reader looks
for. Cells carry data-col attributes: the tests read the page by them."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from html import escape

from components.monitoring import humane
from components.monitoring.alerts import MEMORY_AVAILABLE_BELOW
from components.monitoring.series import (DECODE_TOKENS, KV_CACHE_USAGE, QUANTILE_WINDOW, RATE_WINDOW,
                                          REQUESTS_RUNNING, REQUESTS_WAITING, TTFT_P95, Recorded)
from components.monitoring.status_data import DOWN, UNKNOWN, UP, WEDGED, DeploymentStatus, StackStatus

# Dark enough for white text on them (contrast 4.5:1 or more), and told apart by hue.
STATE_COLOURS = {UP: "#1a7f37", WEDGED: "#b35900", DOWN: "#c62828", UNKNOWN: "#5f6b7a"}
PLOT_W, PLOT_H, PLOT_PAD = 160, 40, 3

CSS = """
* { box-sizing: border-box; }
body { margin: 0; padding: 16px 18px; background: #f3f4f6; color: #16181d;
       font: 14px/1.35 "DejaVu Sans", "Liberation Sans", system-ui, sans-serif; }
header { display: flex; align-items: baseline; gap: 18px; flex-wrap: wrap; margin-bottom: 12px; }
h1 { font-size: 21px; margin: 0; }
.meta { color: #4a5160; font-size: 13px; }
.tally { margin-left: auto; display: flex; gap: 8px; }
.badge { display: inline-block; min-width: 78px; padding: 3px 8px; border-radius: 4px; color: #fff;
         font-weight: 700; font-size: 12.5px; letter-spacing: .06em; text-align: center; text-transform: uppercase; }
.error { background: #fdecea; border: 1px solid #c62828; color: #8e1c1c; padding: 8px 12px; border-radius: 5px;
         margin-bottom: 12px; font-weight: 600; }
table { width: 100%; border-collapse: separate; border-spacing: 0; background: #fff; border: 1px solid #cfd4dc;
        border-radius: 6px; overflow: hidden; }
th { text-align: left; font-size: 11.5px; font-weight: 700; letter-spacing: .05em; text-transform: uppercase;
     color: #3b4250; background: #e8ebef; padding: 7px 8px; border-bottom: 1px solid #cfd4dc; white-space: nowrap; }
th small { display: block; font-weight: 400; text-transform: none; letter-spacing: 0; color: #5a6272; }
td { padding: 9px 8px; border-bottom: 1px solid #e4e7ec; vertical-align: middle; }
tr:last-child td { border-bottom: 0; }
td:first-child { border-left: 7px solid var(--state); width: 172px; }
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.why { font-size: 12px; color: #3b4250; margin-top: 5px; }
.name { font-weight: 700; font-size: 15px; white-space: nowrap; }
td[data-col="deployment"] .sub { white-space: nowrap; }
.sub { font-size: 12px; color: #4a5160; }
.big { font-size: 17px; font-weight: 600; font-variant-numeric: tabular-nums; }
.unit { font-size: 12px; color: #4a5160; font-weight: 400; }
.none { color: #6b7280; font-style: italic; font-size: 13px; font-weight: 400; }
.bad { color: #b3261e; font-weight: 700; }
.plot { display: flex; align-items: center; gap: 8px; }
.plot svg { flex: none; background: #f7f9fb; border: 1px solid #e4e7ec; border-radius: 3px; }
.plot .figs { min-width: 74px; text-align: right; white-space: nowrap; }
.mem { display: grid; grid-template-columns: max-content max-content max-content; column-gap: 10px; row-gap: 2px;
       align-items: baseline; font-variant-numeric: tabular-nums; white-space: nowrap; }
.mem span:nth-child(3n+2), .mem span:nth-child(3n) { text-align: right; }
footer { margin-top: 12px; font-size: 12px; color: #3b4250; display: grid;
         grid-template-columns: max-content 1fr; column-gap: 14px; row-gap: 3px; }
footer b { color: #16181d; }
"""


def none(text: str) -> str:
    return f'<span class="none">{escape(text)}</span>'


def figure(text: str, unit: str = "") -> str:
    """A number and its unit; a word (no data, n/a) greyed, so a reader's eye skips it."""
    if not text[:1].isdigit() and not text.startswith("<"):
        return none(text)
    return f'<span class="big">{escape(text)}</span>' + (f' <span class="unit">{escape(unit)}</span>' if unit else "")


def recorded(d: DeploymentStatus, r: Recorded, format, unit: str = "") -> str:
    """The figure of a recorded series, or n/a where the engine records none."""
    return figure(format(d.figure(r)), unit) if d.records(r) else none("n/a")


def sparkline(points: tuple[tuple[float, float], ...], start: float, end: float) -> str:
    """The tok/s plot: 0 at the bottom, the window's peak at the top, a gap where Prometheus had no
    sample (a step more than 1.5 apart), a dot on the latest value."""
    values = [v for _, v in points if not math.isnan(v)]
    if not values:
        return none(humane.NO_DATA)
    peak = max(max(values), 1e-9)
    span = max(end - start, 1)
    step = min((b[0] - a[0] for a, b in zip(points, points[1:])), default=span)

    def xy(t: float, v: float) -> tuple[float, float]:
        return (round((t - start) / span * PLOT_W, 1),
                round(PLOT_H - PLOT_PAD - v / peak * (PLOT_H - 2 * PLOT_PAD), 1))

    runs, run, last_t = [], [], None
    for t, v in points:
        if math.isnan(v) or (last_t is not None and t - last_t > 1.5 * step):
            if run:
                runs.append(run)
            run = []
        if not math.isnan(v):
            run.append(xy(t, v))
        last_t = t
    if run:
        runs.append(run)
    base = PLOT_H - PLOT_PAD
    shapes = []
    for r in runs:
        line = " ".join(f"{x},{y}" for x, y in r)
        shapes.append(f'<polygon points="{r[0][0]},{base} {line} {r[-1][0]},{base}" fill="#cfe2f7"/>')
        shapes.append(f'<polyline points="{line}" fill="none" stroke="#1f5fa8" stroke-width="1.6" '
                      f'stroke-linejoin="round"/>')
    lx, ly = runs[-1][-1]
    shapes.append(f'<circle cx="{lx}" cy="{ly}" r="2.6" fill="#1f5fa8"/>')
    return (f'<svg width="{PLOT_W}" height="{PLOT_H}" viewBox="0 0 {PLOT_W} {PLOT_H}" role="img" '
            f'aria-label="tokens per second, peak {humane.rate(peak)}">'
            f'<line x1="0" y1="{base}" x2="{PLOT_W}" y2="{base}" stroke="#b8c0cc" stroke-width="1"/>'
            + "".join(shapes) + "</svg>")


def tokens_cell(d: DeploymentStatus, s: StackStatus) -> str:
    """The plot, the latest value and the window's peak; one "no data" when there is neither."""
    values = [v for _, v in d.tokens if not math.isnan(v)]
    now = d.figure(DECODE_TOKENS)
    if not values and now is None:
        return none(humane.NO_DATA)
    plot = sparkline(d.tokens, s.at - s.minutes * 60, s.at) if values else ""
    peak = f'<div class="sub">peak {humane.rate(max(values))}</div>' if values else ""
    return f'<div class="plot">{plot}<div class="figs">{figure(humane.rate(now), "tok/s")}{peak}</div></div>'


def memory_cell(d: DeploymentStatus) -> str:
    cells = []
    for m in d.memory:
        low = ' class="bad"' if m.low else ""
        size, share = humane.size(m.available_bytes), humane.percent(m.available_ratio)
        cells += [f'<span class="sub">{escape(m.node)}</span>',
                  f"<span{low}>{escape(size) if m.available_bytes is not None else none(size)}</span>",
                  f"<span{low}>{escape(share) if m.available_ratio is not None else none(share)}</span>"]
    return f'<div class="mem">{"".join(cells)}</div>'


def restarts_cell(d: DeploymentStatus, s: StackStatus) -> str:
    if d.restarts is None:
        return none(humane.NO_DATA)
    recent = d.restarts_recent or 0
    cls = "sub bad" if recent >= 0.5 else "sub"
    out = figure(humane.count(d.restarts)) + f'<div class="{cls}">+{humane.count(recent)} in {humane.minutes(s.minutes)}</div>'
    return out + ('<div class="bad">restart loop</div>' if d.restart_loop else "")


def badge(state: str, text: str | None = None) -> str:
    return f'<span class="badge" style="background:{STATE_COLOURS[state]}">{escape(text or state)}</span>'


def row(d: DeploymentStatus, s: StackStatus) -> str:
    cells = {
        "state": f'{badge(d.state)}<div class="why">{escape(d.why)}</div>',
        "deployment": f'<div class="name">{escape(d.name)}</div>'
                      f'<div class="sub">{escape(d.engine)} on {escape(", ".join(d.nodes))}</div>',
        "tokens": tokens_cell(d, s),
        "ttft": recorded(d, TTFT_P95, humane.seconds),
        "kv": recorded(d, KV_CACHE_USAGE, humane.percent),
        "running": recorded(d, REQUESTS_RUNNING, humane.count),
        "waiting": recorded(d, REQUESTS_WAITING, humane.count),
        "memory": memory_cell(d),
        "restarts": restarts_cell(d, s),
    }
    numeric = {"ttft", "kv", "running", "waiting", "restarts"}
    tds = "".join(f'<td data-col="{k}"{" class=num" if k in numeric else ""}>{v}</td>' for k, v in cells.items())
    return (f'<tr data-deployment="{escape(d.name)}" data-state="{escape(d.state)}" '
            f'style="--state:{STATE_COLOURS[d.state]}">{tds}</tr>')


def page_html(s: StackStatus) -> str:
    when = datetime.fromtimestamp(s.at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    window = humane.minutes(s.minutes)
    tally = "".join(badge(state, f"{n} {state}") for state, n in s.counts.items() if n)
    error = (f'<div class="error">Prometheus did not answer: {escape(s.error)}. No figure below is current.</div>'
             if s.error else "")
    head = (f'<th>State</th><th>Deployment<small>engine on nodes</small></th>'
            f'<th>Decode<small>tok/s, last {window}</small></th>'
            f'<th class="num">TTFT p95<small>over {QUANTILE_WINDOW}</small></th>'
            f'<th class="num">KV cache<small>in use</small></th>'
            f'<th class="num">Running<small>requests</small></th><th class="num">Waiting<small>requests</small></th>'
            f'<th>Node memory<small>available, share of total</small></th>'
            f'<th class="num">Restarts<small>by the watchdog</small></th>')
    below = round(MEMORY_AVAILABLE_BELOW * 100)
    legend = [
        ("Decode", f"tokens generated per second, a rate over {RATE_WINDOW}; the plot runs from 0 to the "
                   f"window's peak, over the last {window}, a gap where Prometheus had no sample"),
        ("TTFT p95", f"95th percentile of the time to the first token over {QUANTILE_WINDOW} (ms, s); "
                     "no requests: none in that window"),
        ("KV cache", "share of the engine's KV cache in use (100% = full)"),
        ("Node memory", f"MemAvailable of each of the deployment's nodes (GiB) and its share of MemTotal; "
                        f"red under {below}%, the memory-pressure alert's threshold"),
        ("Restarts", f"the watchdog's restarts of the engine since it started; below, in the last {window}"),
        ("n/a · no data", "n/a: the engine exports no such metric (llama.cpp: no latency histogram, no KV cache "
                          "usage); no data: Prometheus has no recent sample"),
        ("States", f"{badge(UP)} answering (serving or idle) {badge(WEDGED)} requests run but no progress "
                   f"{badge(DOWN)} its /metrics does not answer {badge(UNKNOWN)} nothing in Prometheus"),
    ]
    footer = "".join(f"<b>{escape(k)}</b><span>{v if k == 'States' else escape(v)}</span>" for k, v in legend)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(s.stack)}: {' · '.join(f'{n} {k}' for k, n in s.counts.items() if n)}</title>
<style>{CSS}</style></head>
<body>
<header><h1>blackwell-serving · {escape(s.stack)}</h1>
<span class="meta">as of {when} · Prometheus {escape(s.prometheus)}</span>
<span class="tally">{tally}</span></header>
{error}<table>
<thead><tr>{head}</tr></thead>
<tbody>
{chr(10).join(row(d, s) for d in s.deployments)}
</tbody></table>
<footer>{footer}</footer>
</body></html>
"""
