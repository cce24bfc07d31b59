"""The lab tests share converged states instead of each making its own.

A full converge of the `lab` stack (three engines, the gateway, images built on lab-1 and copied to
lab-2) takes minutes; a destroy throws all of it away. So every lab test module says which state of
the operator's `lab` stack it works on, in a module constant LAB_STATE, and the lab tests run
grouped by it, in this order:

  converged   the `lab` stack converged (the main job leaves it so; the module's fixture converges
              it, a no-op then) and left converged: read it, or break it and repair it;
  gives-back  converged first, and ends with the destroy that gives the nodes back (test_lab_e2e);
  clean       nothing of the `lab` stack deployed: the module deploys stacks of its own (its own
              backend) and destroys them.

Within a group, modules keep their file order, and tests their order in the module. A lab module
without LAB_STATE stops the collection, naming the file and the fix.

Which phases a run takes: BWS_LAB_PHASES (comma-separated; all three when unset). The lab's nodes
come in pairs (tests/lab/topology.py): the `lab` stack lives on pair 1, so a run on another pair
(BWS_LAB_PAIR=2) takes the clean phase only; scripts/test.sh runs the clean phase on pair 2 beside
the other two on pair 1. The phases a run leaves out are deselected, and pytest's summary counts them.

A module with LAB_OPT_IN (the name of an environment variable) runs only when that variable is 1:
its work does not share the lab with the others (tests/lab/test_lab_bare_operator.py says why).
Its tests are deselected otherwise, and pytest's summary counts them."""

from __future__ import annotations

import os

import pytest

from tests.lab import topology as lab
from tests.lab.outcome import CALL_REPORT

PHASES = ("converged", "gives-back", "clean")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Each test's call report, kept on its item (tests/lab/outcome.py)."""
    report = yield
    if report.when == "call":
        item.stash[CALL_REPORT] = report
    return report


def lab_phase(item: pytest.Item) -> int:
    state = getattr(item.module, "LAB_STATE", None)
    if state not in PHASES:
        raise pytest.UsageError(
            f"{item.module.__file__}: LAB_STATE is {state!r}; fix: set the module constant LAB_STATE to one of "
            f"{', '.join(PHASES)} (tests/lab/conftest.py says what each means)")
    return PHASES.index(state)


def is_lab(item: pytest.Item) -> bool:
    return item.get_closest_marker("lab") is not None and "/tests/lab/" in str(item.path)


def opted_in(item: pytest.Item) -> bool:
    variable = getattr(getattr(item, "module", None), "LAB_OPT_IN", None)
    return variable is None or os.environ.get(variable) == "1"


def phases_of_this_run() -> tuple[str, ...]:
    try:
        pair = lab.pair()
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    raw = os.environ.get("BWS_LAB_PHASES", "")
    phases = tuple(p.strip() for p in raw.split(",") if p.strip()) or (PHASES if pair == 1 else ("clean",))
    if unknown := [p for p in phases if p not in PHASES]:
        raise pytest.UsageError(f"BWS_LAB_PHASES names {', '.join(unknown)}; fix: a comma-separated list of "
                                f"{', '.join(PHASES)}")
    if pair != 1 and phases != ("clean",):
        raise pytest.UsageError(f"BWS_LAB_PAIR={pair} with BWS_LAB_PHASES={raw}: the `lab` stack lives on pair 1; "
                                "fix: BWS_LAB_PHASES=clean on another pair")
    return phases


def pytest_collection_modifyitems(config, items):
    """The lab items of this run's phases sorted by their phase (a stable sort: file order within a
    phase), in the places the lab items held; every other item stays where it was."""
    phases = phases_of_this_run()
    kept, opted_out = [], []
    for item in items:
        taken = opted_in(item) and (not is_lab(item) or PHASES[lab_phase(item)] in phases)
        (kept if taken else opted_out).append(item)
    if opted_out:
        config.hook.pytest_deselected(items=opted_out)
        items[:] = kept
    slots = [i for i, item in enumerate(items) if is_lab(item)]
    ordered = sorted((items[i] for i in slots), key=lab_phase)
    for slot, item in zip(slots, ordered):
        items[slot] = item
