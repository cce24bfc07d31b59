"""What every node fact has: its descriptor (Fact: the probe line's kind, the shell that reads
it, its parser, the command text no other template may hold) and the expectation protocol the
components' steps state their node's facts in."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Protocol

ABSENT = "absent"

# node → its NodeFacts (components/facts/observation.py, which builds on these modules: named, not imported)
Facts = Mapping[str, Any]
WatchItem = tuple[str, str, str]        # (node, Watch attribute, key)


@dataclass(frozen=True)
class Fact:
    """One node fact. Its shell (a template under templates/scripts/facts/) defines `function`,
    which prints one tab-separated line `kind KEY FIELDS…`; `parse` turns FIELDS into the value
    NodeFacts keeps under `attribute`. Every script that reads the fact includes that shell:
    `signatures` are the command texts that read it (its shell's, and other ways to read the same
    thing), which no template outside its shells may hold (tests/unit/test_facts_once.py).
    `helpers`: the fact's other shells, for scripts that need a part of it (a verdict, the value alone)."""
    kind: str
    attribute: str
    shell: str
    function: str
    parse: Callable[[list[str]], Any]
    signatures: tuple[str, ...]
    helpers: tuple[str, ...] = ()

    def home(self) -> tuple[str, ...]:
        return (self.shell, *self.helpers)


@dataclass(frozen=True)
class Reading:
    """A reading of a node's resources (its memory, its GPUs, its driver) that the preflight, the
    status view, discovery's checks and the memory release take, not a fact the observation
    compares: its shell (a template under templates/scripts/facts/) defines `function`, and every
    script that reads it includes that shell. `signatures`: the command texts that read it, which
    no template outside its shell may hold (tests/unit/test_facts_once.py)."""
    kind: str
    shell: str
    function: str
    signatures: tuple[str, ...]

    def home(self) -> tuple[str, ...]:
        return (self.shell,)


def value_or_absent(f: list[str]) -> str:
    """The parser of a fact that is one value, ABSENT when the node printed none."""
    return f[0] or ABSENT


def value(f: list[str]) -> str:
    """The parser of a fact that is one word as the node printed it."""
    return f[0]


class Expectation(Protocol):
    def watch(self) -> Iterable[WatchItem]: ...

    def drift(self, facts: Facts) -> str | None:
        """None when the node is as the step left it; otherwise why the step must run again."""


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def copy_drift(facts: Facts, kind: str, key: str, source: str, peer: str, *, absent: str,
               differs: str) -> str | None:
    """A copy on `peer` of what `source` holds (an image ID, a cache manifest), compared by
    content address; a source that holds nothing itself leaves the copy's verdict to its own step."""
    want = getattr(facts[source], kind).get(key, ABSENT)
    have = getattr(facts[peer], kind).get(key, ABSENT)
    if have == ABSENT:
        return f"drift: {absent}"
    if want != ABSENT and have != want:
        return f"drift: {differs}"
    return None
