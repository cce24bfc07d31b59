"""How many nodes of a Ray cluster are active, as `ray status` lists them inside the head's
container, read by templates/scripts/facts/ray_members.sh.j2 for the observation and the
cluster's wait alike (the wait used ray.nodes() through a driver, which registers a job each time:
not for a read-only probe). Joined means at least the expected count, in both."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Fact


def parse(f: list[str]) -> int:
    return int(f[0]) if f[0].isdigit() else 0


FACT = Fact("ray", "ray", "scripts/facts/ray_members.sh.j2", "ray_members", parse, ("ray.nodes()", "ray status"))


@dataclass(frozen=True)
class RayMembers:
    node: str
    container: str
    expected: int

    def watch(self):
        return [(self.node, "ray", self.container)]

    def drift(self, facts):
        alive = facts[self.node].ray.get(self.container, 0)
        if alive < self.expected:
            return f"drift: {alive} of {self.expected} Ray nodes alive"
        return None
