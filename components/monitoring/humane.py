"""Figures for people: a unit on each, as many digits as a reader uses (no 12-digit floats), and
plain words where there is no number. The status page (status_html.py) shows these strings."""

from __future__ import annotations

import math

NO_DATA = "no data"


def _none(value: float | None) -> str | None:
    if value is None:
        return NO_DATA
    if math.isnan(value):
        return "n/a"
    return None


def rate(value: float | None) -> str:
    """Tokens per second: 0.42, 7.5, 42.5, 1,234."""
    if (word := _none(value)) is not None:
        return word
    if value == 0:
        return "0"
    if value < 1:
        return f"{value:.2f}"
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def seconds(value: float | None) -> str:
    """A latency: 12 ms, 488 ms, 1.25 s, 42 s, 3.5 min. A quantile over no request is NaN."""
    if value is None:
        return NO_DATA
    if math.isnan(value):
        return "no requests"
    if math.isinf(value):
        return "over the top bucket"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 10:
        return f"{value:.2f} s"
    return f"{value:.0f} s" if value < 120 else f"{value / 60:.1f} min"


def percent(ratio: float | None) -> str:
    """A 0–1 ratio: 75%, 7.5%, <1% (above 0), 0%."""
    if (word := _none(ratio)) is not None:
        return word
    p = ratio * 100
    if p == 0:
        return "0%"
    if p < 1:
        return "<1%"
    return f"{p:.1f}%" if p < 10 else f"{p:.0f}%"


def size(value: float | None) -> str:
    """Bytes, in binary units: 512 MiB, 9.8 GiB, 112 GiB."""
    if (word := _none(value)) is not None:
        return word
    for unit, scale in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20)):
        if value >= scale:
            n = value / scale
            return f"{n:.1f} {unit}" if n < 100 else f"{n:.0f} {unit}"
    return f"{value / 2 ** 10:.0f} KiB"


def count(value: float | None) -> str:
    """A number of things: whole (a counter's increase() extrapolates: 1.98 restarts is 2)."""
    if (word := _none(value)) is not None:
        return word
    return f"{round(value):,}"


def minutes(value: float) -> str:
    return f"{value:g} min"
