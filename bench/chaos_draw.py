"""What each chaos run sends and when (bench/chaos_bench.py): drawn from the run's seed, but held
to the bench's quota and spread, so that a sitting of a few runs cannot draw SIGINT five times of
six, or put every kill in the same minute of the converge."""

from __future__ import annotations

import random
import signal


def draw_signal(rng: random.Random, counted: list[dict], planned: int, sigkill_at_least: int) -> signal.Signals:
    """SIGKILL or SIGINT at random, but SIGKILL whenever the runs left are no more than the
    SIGKILLs still owed, and with a chance of at least what is owed over what is left: the quota
    is met without all the SIGKILLs falling at the end."""
    owed = sigkill_at_least - sum(1 for r in counted if r.get("signal") == "SIGKILL")
    left = planned - len(counted)
    if owed <= 0:
        return rng.choice([signal.SIGINT, signal.SIGKILL])
    if owed >= left:
        return signal.SIGKILL
    return signal.SIGKILL if rng.random() < max(0.5, owed / left) else signal.SIGINT


def draw_moment(rng: random.Random, window: tuple[float, float], counted: list[dict], bins: int) -> float:
    """A moment in the kill window, uniform within its least-hit slice (the window cut in `bins`
    equal slices; ties drawn at random): the kills spread over the whole converge, the image
    copy, the model copy, the ranks' starts and the health gates alike."""
    start, end = window
    width = (end - start) / bins
    hits = [0] * bins
    for r in counted:
        at = r.get("at_s")
        if at is not None and start <= at < end:
            hits[min(bins - 1, int((at - start) // width))] += 1
    fewest = min(hits)
    slot = rng.choice([i for i, n in enumerate(hits) if n == fewest])
    return rng.uniform(start + slot * width, start + (slot + 1) * width)
