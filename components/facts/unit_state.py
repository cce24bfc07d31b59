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


def parse(f: list[str]) -> UnitFacts:
    return UnitFacts(load=f[0], active=f[1], enabled=f[2], sha256=f[3])


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
            return f"drift: unit file {self.unit} edited on the node"
        if u.active not in RUNNING:
            return f"drift: observed {u.active}"
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
