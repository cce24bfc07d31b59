"""Which built venv a venv engine's `current` names (components/resources/venv.py), read by
templates/scripts/facts/venv_current.sh.j2."""

from __future__ import annotations

from dataclasses import dataclass

from components.facts.base import ABSENT, Fact, value_or_absent

FACT = Fact("venv", "venvs", "scripts/facts/venv_current.sh.j2", "venv_current", value_or_absent,
            ("readlink \"$1/current\"",))


@dataclass(frozen=True)
class VenvCurrent:
    """A venv engine (components/resources/venv.py): `current` names the built venv of this recipe."""
    node: str
    root: str
    digest: str

    def watch(self):
        return [(self.node, "venvs", self.root)]

    def drift(self, facts):
        have = facts[self.node].venvs.get(self.root, ABSENT)
        if have == ABSENT:
            return f"drift: no built venv in use at {self.root}/current on {self.node}"
        if have != self.digest:
            return f"drift: {self.root}/current names venv {have}, not {self.digest}"
        return None
