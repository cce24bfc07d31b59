"""The watchdog of an engine stopped by hand, on the converged lab (the operator's `lab` stack,
converged first: a no-op when it already is): `systemctl stop bws-tiny.service` on lab-1, and the
watchdog (every 10 s there) leaves it alone and says so in its journal once — the unit's state,
since when, and `systemctl start bws-tiny.service` to hand it back — not at every interval; the
engine started again as that line says, the watchdog answers from it again. Costs one restart of
the tiny engine (its start on the lab's CPU)."""

from __future__ import annotations

import pytest

from components import names
from tests.lab import topology as lab
from tests.lab.helpers import (completion, converge_lab_stack, deployment, journal_since, node_now, require_lab, sh,
                               unit_prop, watchdog_state)
from tests.wait import wait_until

pytestmark = pytest.mark.lab
LAB_STATE = "converged"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE1, NODE2 = lab.nodes(2)
TINY = deployment("tiny")
ENGINE, (WATCHDOG, _) = names.engine_unit(TINY.name), names.watchdog_units(TINY.name)
INTERVAL_S = TINY.watchdog.interval_s
ENGINE_START_S = 300


@pytest.fixture(scope="module")
def converged():
    require_lab(NODE1, NODE2)
    converge_lab_stack()


def engine_answers() -> bool:
    try:
        return bool(completion()["choices"])
    except Exception:
        return False


def test_an_engine_stopped_by_hand_is_told_once_and_handed_back(converged):
    assert unit_prop(NODE1, ENGINE, "ActiveState") == "active"
    since = node_now(NODE1)
    sh(NODE1, f"systemctl stop {ENGINE}")
    try:
        # Four runs of the timer or more (systemd's "Finished" line ends each run of the oneshot):
        # it ran every interval, and said it once.
        runs = lambda: journal_since(NODE1, WATCHDOG, since).count("Finished")
        wait_until(lambda: runs() >= 4, 8 * INTERVAL_S, "four runs of the watchdog since the stop",
                   seen=lambda: journal_since(NODE1, WATCHDOG, since), every_s=INTERVAL_S / 2)
        journal = journal_since(NODE1, WATCHDOG, since)
        told = [line for line in journal.splitlines() if f"not checking {ENGINE}" in line]
        assert len(told) == 1, journal[-3000:]
        assert "it is inactive (dead, result success) since" in told[0], told
        assert f"hand it back to the watchdog with: systemctl start {ENGINE}" in told[0], told
        assert unit_prop(NODE1, ENGINE, "ActiveState") == "inactive"   # left alone
    finally:
        sh(NODE1, f"systemctl start {ENGINE}")
    took = wait_until(engine_answers, ENGINE_START_S, "serving again after systemctl start")
    print(f"serving again {took:.0f} s after systemctl start")
    # Handed back: once it runs again the watchdog checks it, and a new stop would be told again.
    wait_until(lambda: sh(NODE1, f"test -e {watchdog_state(TINY.name, 'skipped')} && echo y || echo n") == "n",
               3 * INTERVAL_S, "the watchdog taking the engine back")
