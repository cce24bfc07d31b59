"""Bounded waits: a test waits for the condition it needs, never a fixed time that assumes it
(a loaded machine stretches any time, and the check then reads a state that was not reached yet);
a wait that runs out fails with what it last saw. tests/unit/test_tests_hygiene.py holds the tests
to it."""

from __future__ import annotations

import time
from pathlib import Path


def wait_until(check, timeout_s: float, what: str, *, seen=None, every_s: float = 2.0) -> float:
    """Seconds until check() held, asked every every_s; past timeout_s, fails with `what` and what
    was last seen: seen() when given, else check()'s last value."""
    start = time.monotonic()
    while not (last := check()):
        if time.monotonic() - start > timeout_s:
            shown = seen() if seen is not None else last
            raise AssertionError(f"{what}: not within {timeout_s} s; last seen: "
                                 f"{shown[-3000:] if isinstance(shown, str) else repr(shown)}")
        time.sleep(every_s)
    return time.monotonic() - start


def _state_and_sleeps(pid: int) -> tuple[str, int]:
    """(state letter, voluntary context switches) of a live process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        raise AssertionError(f"process {pid} is gone") from None
    [switches] = [line.split()[1] for line in status.splitlines() if line.startswith("voluntary_ctxt_switches:")]
    return stat[stat.rindex(")") + 2], int(switches)


def wait_for_rounds(pid: int, rounds: int, timeout_s: float, what: str) -> None:
    """Until the poller `pid` (a loop that looks, then sleeps: the reaper's watcher) has made
    `rounds` whole rounds that began after this call. Seen from outside: once it is asleep (state S:
    between two rounds, the look before it done), each round ends in one more sleep of its own
    accord (a voluntary context switch)."""
    wait_until(lambda: _state_and_sleeps(pid)[0] == "S", timeout_s, f"{what}: asleep between two rounds",
               seen=lambda: _state_and_sleeps(pid), every_s=0.01)
    first = _state_and_sleeps(pid)[1]
    wait_until(lambda: _state_and_sleeps(pid)[1] >= first + rounds, timeout_s, what,
               seen=lambda: f"{_state_and_sleeps(pid)[1] - first} of {rounds} rounds", every_s=0.05)
