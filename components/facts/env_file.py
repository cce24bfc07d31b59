"""Whether a unit's secret EnvironmentFile (components/resources/unit.py's `<unit>-env` step) is on its node,
read by templates/scripts/facts/env_file.sh.j2. Told by the generation token kept beside it
(templates/scripts/install-env.sh.j2), never by its content: the file holds secrets, and nothing
of them, not even a digest, leaves the node."""

from __future__ import annotations

from dataclasses import dataclass

from components.facts.base import ABSENT, Fact, value_or_absent

FACT = Fact("envfile", "env_files", "scripts/facts/env_file.sh.j2", "env_file", value_or_absent,
            ('"$1.generation"',))


@dataclass(frozen=True)
class EnvFileWritten:
    """The env step wrote the file: a reinstalled or wiped node lost it, and its unit cannot start
    (Docker refuses a bind mount of a missing file) until the step writes it again."""
    node: str
    path: str

    def watch(self):
        return [(self.node, "env_files", self.path)]

    def drift(self, facts):
        if facts[self.node].env_files.get(self.path, ABSENT) == ABSENT:
            return f"drift: secret environment file {self.path} absent"
        return None
