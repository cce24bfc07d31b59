"""The chaos bench's draws (bench/chaos_draw.py): the SIGKILL quota is met whatever the seed, and the
kill moments fill every slice of the window before any slice gets a second."""

import random
import signal

import pytest

from bench.chaos_draw import draw_moment, draw_signal


def sitting(seed: int, planned: int, quota: int, earlier: list[dict] = ()) -> list[dict]:
    rng, runs = random.Random(seed), list(earlier)
    while len(runs) < planned:
        runs.append({"signal": draw_signal(rng, runs, planned, quota).name,
                     "at_s": draw_moment(rng, (20.0, 180.0), runs, bins=planned)})
    return runs


@pytest.mark.parametrize("seed", range(200))
def test_the_sigkill_quota_is_met_whatever_the_seed(seed):
    runs = sitting(seed, 20, 10)
    assert sum(r["signal"] == "SIGKILL" for r in runs) >= 10


def test_a_continued_sitting_owes_what_the_first_did_not_send():
    """The first sitting of 2026-12-07 sent one SIGKILL in six runs: the 14 left owe 9."""
    first = [{"signal": "SIGINT", "at_s": 40.0}] * 5 + [{"signal": "SIGKILL", "at_s": 68.0}]
    for seed in range(50):
        runs = sitting(seed, 20, 10, first)
        assert sum(r["signal"] == "SIGKILL" for r in runs) >= 10


def test_no_quota_leaves_both_signals_possible():
    drawn = {draw_signal(random.Random(seed), [], 20, 0) for seed in range(20)}
    assert drawn == {signal.SIGINT, signal.SIGKILL}


def test_every_slice_of_the_window_is_hit_before_any_is_hit_twice():
    runs = sitting(7, 8, 4)
    slices = sorted(int((r["at_s"] - 20.0) // 20.0) for r in runs)
    assert slices == list(range(8))


def test_moments_outside_the_window_do_not_count_against_a_slice():
    """A window narrowed after an `up` ended early: earlier kills beyond its end fill no slice."""
    runs = [{"at_s": 300.0}, {"at_s": 25.0}]
    moments = {draw_moment(random.Random(s), (20.0, 60.0), runs, bins=2) for s in range(20)}
    assert all(40.0 <= m < 60.0 for m in moments)
