"""A systemd unit's state on its node: loaded, active, enabled, and the hash of its file.
Read by templates/scripts/facts/unit_state.sh.j2 (the observation, the keep check, the retire
step's record); "running" means one thing for all of them: RUNNING here, unit_running
(templates/scripts/facts/unit_running.sh.j2) in the keep and resources checks."""

from __future__ import annotations

from dataclasses import dataclass

from components.facts.base import ABSENT, Fact, sha256_text

# unit_running's `case` lists the same states (tests/unit/test_facts_once.py).
RUNNING = ("active", "activating", "reloading")


@dataclass(frozen=True)
class UnitFacts:
    load: str          # loaded | not-found | masked | …
    active: str        # active | inactive | failed | activating | …
    enabled: str       # enabled | disabled | masked | "" when not installed
    sha256: str        # of /etc/systemd/system/<unit>, or "absent"
    result: str = ""   # systemd's Result: success | exit-code | start-limit-hit | … ("" unknown)
    written: str = ""  # the hash install-unit.sh.j2 recorded of the text it wrote ("" none)
    put_back: bool = False  # a rollback put the previous text back (names.unit_put_back_mark)


def parse(f: list[str]) -> UnitFacts:
    return UnitFacts(load=f[0], active=f[1], enabled=f[2], sha256=f[3], result=f[4] if len(f) > 4 else "",
                     written=f[5] if len(f) > 5 else "", put_back=len(f) > 6 and f[6] == "put-back")


FACT = Fact("unit", "units", "scripts/facts/unit_state.sh.j2", "unit_state", parse,
            ("systemctl show -p LoadState", "systemctl is-enabled", "systemctl is-active"),
            helpers=("scripts/facts/unit_running.sh.j2",))


@dataclass(frozen=True)
class UnitRunning:
    """A unit of ours: its file as we wrote it, enabled, and running."""
    node: str
    unit: str
    text: str

    def watch(self):
        return [(self.node, "units", self.unit)]

    def drift(self, facts):
        u = facts[self.node].units.get(self.unit)
        if u is None or u.sha256 == ABSENT:
            return f"drift: unit file {self.unit} absent"
        if u.sha256 != sha256_text(self.text):
            # Edited on the node only when the file differs from what was written there; the
            # program's text differing from what was written is a config change: the step's
            # update says it, not a drift.
            if not u.written or u.sha256 != u.written:
                return f"drift: unit file {self.unit} edited on the node"
            # A failed run's rollback wrote the previous text: the state records the new one, so no
            # update would show it; the node shows it.
            if u.put_back:
                return f"drift: unit file {self.unit} put back to its previous version by a rolled-back run"
        if u.active not in RUNNING or u.result == "start-limit-hit":
            # A unit systemd gave up on names how (the install step resets it and starts it again).
            given_up = u.active == "failed" or u.result == "start-limit-hit"
            why = f" ({u.result})" if given_up and u.result not in ("", "success") else ""
            return f"drift: observed {u.active}{why}"
        if u.enabled not in ("enabled", "enabled-runtime"):
            return f"drift: observed {u.enabled or 'not enabled'}"
        return None


@dataclass(frozen=True)
class UnitRetired:
    """A foreign unit we stopped: not running and not enabled (or not installed at all)."""
    node: str
    unit: str

    def watch(self):
        return [(self.node, "units", self.unit)]

    def drift(self, facts):
        u = facts[self.node].units.get(self.unit)
        if u is None or u.load == "not-found":
            return None
        if u.active in RUNNING:
            return f"drift: {self.unit} observed {u.active} again"
        if u.enabled in ("enabled", "enabled-runtime"):
            return f"drift: {self.unit} observed enabled again"
        return None


@dataclass(frozen=True)
class UnitKept:
    """A foreign unit that must stay up; running its check again fails with the fix."""
    node: str
    unit: str

    def watch(self):
        return [(self.node, "units", self.unit)]

    def drift(self, facts):
        u = facts[self.node].units.get(self.unit)
        if u is None or u.active not in RUNNING:
            return f"drift: kept unit {self.unit} observed {u.active if u else 'absent'}"
        return None
