"""A model cache directory: intact (its manifest and fingerprint, templates/scripts/_cache_check.sh.j2,
which the fetch and the copy use too) and its manifest's hash, read by
templates/scripts/facts/model_cache.sh.j2."""

from __future__ import annotations

from dataclasses import dataclass

from components.facts.base import ABSENT, Fact, copy_drift, value_or_absent

FACT = Fact("dir", "dirs", "scripts/facts/model_cache.sh.j2", "model_cache", value_or_absent,
            ("sha256sum < \"$1/.blackwell-manifest.sha256\"",), helpers=("scripts/_cache_check.sh.j2",))


@dataclass(frozen=True)
class CacheComplete:
    """A model directory with its manifest (written last, so present means complete)."""
    node: str
    path: str

    def watch(self):
        return [(self.node, "dirs", self.path)]

    def drift(self, facts):
        if facts[self.node].dirs.get(self.path, ABSENT) == ABSENT:
            return f"drift: model cache {self.path} absent or incomplete on {self.node}"
        return None


@dataclass(frozen=True)
class CacheCopied:
    source: str
    peer: str
    path: str

    def watch(self):
        return [(self.source, "dirs", self.path), (self.peer, "dirs", self.path)]

    def drift(self, facts):
        return copy_drift(facts, "dirs", self.path, self.source, self.peer,
                          absent=f"model cache absent or incomplete on {self.peer}",
                          differs=f"model cache on {self.peer} differs from {self.source}")
