"""How many nodes of a Ray cluster are alive, as Ray's own API tells it (ray.nodes(), asked in
the head's container), read by templates/scripts/facts/ray_members.sh.j2 for the observation and
the cluster's wait alike. The wait's reading, proven in the lab, won over the observation's awk
over `ray status` (a text format, never checked against a live cluster); it joins the cluster as
a short-lived driver. Joined means at least the expected count, in both."""

from __future__ import annotations

from dataclasses import dataclass

from components.facts.base import Fact


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
