"""What each kind of step expects to find on its node once it has run, and the drift reason when
the node says otherwise. Pure functions of the probe's facts: no node is needed to test them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable, Mapping, Protocol

from .facts import ABSENT, NodeFacts

Facts = Mapping[str, NodeFacts]
WatchItem = tuple[str, str, str]        # (node, Watch attribute, key)


class Expectation(Protocol):
    def watch(self) -> Iterable[WatchItem]: ...

    def drift(self, facts: Facts) -> str | None:
        """None when the node is as the step left it; otherwise why the step must run again."""


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


RUNNING = {"active", "activating", "reloading"}


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


@dataclass(frozen=True)
class FabricUp:
    node: str
    netdev: str
    address: str
    mtu: int
    rdma_ports: tuple[str, ...] = ()     # "hca/port"

    def watch(self):
        return [(self.node, "links", self.netdev), *((self.node, "rdma_ports", p) for p in self.rdma_ports)]

    def drift(self, facts):
        f = facts[self.node]
        link = f.links.get(self.netdev)
        if link is None or link.operstate == ABSENT:
            return f"drift: fabric netdev {self.netdev} absent"
        if not link.admin_up:
            return f"drift: fabric netdev {self.netdev} observed administratively down"
        if link.operstate in ("down", "lowerlayerdown", "notpresent", "dormant"):
            return f"drift: fabric netdev {self.netdev} observed {link.operstate}"
        if self.address not in link.addresses:
            return f"drift: fabric netdev {self.netdev} does not hold {self.address}"
        if link.mtu != self.mtu:
            return f"drift: fabric netdev {self.netdev} has MTU {link.mtu}, expected {self.mtu}"
        for port in self.rdma_ports:
            state = f.rdma_ports.get(port, ABSENT)
            if "ACTIVE" not in state:
                return f"drift: RDMA port {port} observed {state}"
        return None


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


@dataclass(frozen=True)
class EndpointAnswers:
    node: str
    url: str

    def watch(self):
        return [(self.node, "urls", self.url)]

    def drift(self, facts):
        status = facts[self.node].urls.get(self.url, "000")
        if status != "200":
            return f"drift: {self.url} not answering" + (f" (HTTP {status})" if status != "000" else "")
        return None


@dataclass(frozen=True)
class VenvCurrent:
    """A venv engine (components/venv.py): `current` names the built venv of this recipe."""
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
