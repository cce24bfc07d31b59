"""What one probe asks of a node (Watch) and what it found (NodeFacts), with the parser of the
probe's output: one tab-separated line per fact, written by templates/scripts/observe.sh.j2."""

from __future__ import annotations

from dataclasses import dataclass, field

ABSENT = "absent"


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

    def empty(self) -> bool:
        return not any(vars(self).values())


@dataclass(frozen=True)
class UnitFacts:
    load: str          # loaded | not-found | masked | …
    active: str        # active | inactive | failed | activating | …
    enabled: str       # enabled | disabled | masked | "" when not installed
    sha256: str        # of /etc/systemd/system/<unit>, or "absent"


@dataclass(frozen=True)
class LinkFacts:
    operstate: str     # up | down | unknown | absent
    admin_up: bool
    mtu: int | None
    addresses: tuple[str, ...]


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
    unreachable: str | None = None                             # why the probe could not run


class ProbeOutputError(ValueError):
    pass


def parse(text: str) -> NodeFacts:
    """NodeFacts from the probe's stdout; a line it cannot read is an error, not a guess."""
    facts = NodeFacts()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        kind, *f = line.split("\t")
        try:
            if kind == "unit":
                facts.units[f[0]] = UnitFacts(load=f[1], active=f[2], enabled=f[3], sha256=f[4])
            elif kind == "image":
                facts.images[f[0]] = f[1] or ABSENT
            elif kind == "dir":
                facts.dirs[f[0]] = f[1] or ABSENT
            elif kind == "link":
                facts.links[f[0]] = LinkFacts(operstate=f[1], admin_up=f[2] == "1",
                                              mtu=int(f[3]) if f[3].isdigit() else None,
                                              addresses=tuple(a for a in f[4].split(",") if a))
            elif kind == "rdma":
                facts.rdma_ports[f[0]] = f[1]
            elif kind == "url":
                facts.urls[f[0]] = f[1]
            elif kind == "ray":
                facts.ray[f[0]] = int(f[1]) if f[1].isdigit() else 0
            elif kind == "venv":
                facts.venvs[f[0]] = f[1] or ABSENT
            else:
                raise ProbeOutputError(f"line {number}: unknown fact kind {kind!r}")
        except IndexError:
            raise ProbeOutputError(f"line {number}: too few fields: {line!r}") from None
    return facts
