"""What one probe asks of a node (Watch) and what it found (NodeFacts), with the parser of the
probe's output: one tab-separated line per fact, written by templates/scripts/observe.sh.j2 with
each fact's own shell and read with each fact's own parser (components/facts)."""

from __future__ import annotations

from dataclasses import dataclass, field

from components.facts import ALL, LinkFacts, UnitFacts
from components.steps.render import render

BY_KIND = {fact.kind: fact for fact in ALL}


@dataclass
class Watch:
    """The things of one node that the stack's expectations look at."""
    units: set[str] = field(default_factory=set)
    images: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)          # model cache directories
    links: set[str] = field(default_factory=set)         # fabric netdevs
    rdma_ports: set[str] = field(default_factory=set)    # "hca/port"
    urls: set[str] = field(default_factory=set)          # HTTP endpoints, asked from the node itself
    ray: set[str] = field(default_factory=set)           # Ray head containers
    venvs: set[str] = field(default_factory=set)         # ROOT/IMAGE directories of venv engines
    env_files: set[str] = field(default_factory=set)     # our units' secret EnvironmentFiles

    def empty(self) -> bool:
        return not any(vars(self).values())


@dataclass
class NodeFacts:
    units: dict[str, UnitFacts] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)       # ref → image ID or "absent"
    dirs: dict[str, str] = field(default_factory=dict)         # dir → manifest sha256 or "absent"
    links: dict[str, LinkFacts] = field(default_factory=dict)
    rdma_ports: dict[str, str] = field(default_factory=dict)   # "hca/port" → state text or "absent"
    urls: dict[str, str] = field(default_factory=dict)         # url → HTTP status ("000": no answer)
    ray: dict[str, int] = field(default_factory=dict)          # container → alive nodes (0: none/unknown)
    venvs: dict[str, str] = field(default_factory=dict)        # ROOT/IMAGE → the built venv `current` names, or "absent"
    env_files: dict[str, str] = field(default_factory=dict)    # path → its generation token, or "absent"
    unreachable: str | None = None                             # why the probe could not run


def probe_script(watch: Watch) -> str:
    """The node's one read-only probe: the shell of each fact watched, then one call per key."""
    return render("scripts/observe.sh.j2", watch=watch, facts=ALL)


class ProbeOutputError(ValueError):
    pass


def parse(text: str) -> NodeFacts:
    """NodeFacts from the probe's stdout; a line it cannot read is an error, not a guess."""
    facts = NodeFacts()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        kind, *f = line.split("\t")
        fact = BY_KIND.get(kind)
        if fact is None:
            raise ProbeOutputError(f"line {number}: unknown fact kind {kind!r}")
        try:
            getattr(facts, fact.attribute)[f[0]] = fact.parse(f[1:])
        except IndexError:
            raise ProbeOutputError(f"line {number}: too few fields: {line!r}") from None
    return facts
