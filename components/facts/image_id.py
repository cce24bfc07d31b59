"""An image's ID on a node (docker image inspect), read by templates/scripts/facts/image_id.sh.j2:
for the observation (image_state.sh.j2), the build, the copy (on both ends), the layer registry's
start and fill."""

from __future__ import annotations

from dataclasses import dataclass

from components.facts.base import ABSENT, Fact, copy_drift, value_or_absent

FACT = Fact("image", "images", "scripts/facts/image_state.sh.j2", "image_state", value_or_absent,
            ("{{.Id}}", "image inspect {{ "),
            helpers=("scripts/facts/image_id.sh.j2",))


@dataclass(frozen=True)
class ImagePresent:
    node: str
    ref: str

    def watch(self):
        return [(self.node, "images", self.ref)]

    def drift(self, facts):
        if facts[self.node].images.get(self.ref, ABSENT) == ABSENT:
            return f"drift: image {self.ref} absent on {self.node}"
        return None


@dataclass(frozen=True)
class ImageCopied:
    """The peer holds the very image the source holds (same ID)."""
    source: str
    peer: str
    ref: str

    def watch(self):
        return [(self.source, "images", self.ref), (self.peer, "images", self.ref)]

    def drift(self, facts):
        return copy_drift(facts, "images", self.ref, self.source, self.peer,
                          absent=f"image {self.ref} absent on {self.peer}",
                          differs=f"image {self.ref} on {self.peer} differs from {self.source}")
