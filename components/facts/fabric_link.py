"""The fabric link of a node, read by templates/scripts/facts/fabric_link.sh.j2 for the
observation and the preflight alike. One meaning of "up": administratively UP and carrier
(IFF_UP and /sys/class/net/DEV/carrier = 1) — the shell prints that verdict as STATE, and every
user takes it from there rather than from operstate or `ip link` flags of its own."""

from __future__ import annotations

from dataclasses import dataclass

from components.facts.base import ABSENT, Fact
from components.facts.rdma_port import port_active

UP = "up"


@dataclass(frozen=True)
class LinkFacts:
    state: str         # up | admin-down | no-carrier | absent
    operstate: str     # the kernel's word, for the message
    mtu: int | None
    addresses: tuple[str, ...]


def parse(f: list[str]) -> LinkFacts:
    return LinkFacts(state=f[0], operstate=f[1], mtu=int(f[2]) if f[2].isdigit() else None,
                     addresses=tuple(a for a in f[3].split(",") if a))


FACT = Fact("link", "links", "scripts/facts/fabric_link.sh.j2", "fabric_link", parse,
            ("/operstate", "/flags", "/carrier", "ip -o link", "/sys/class/net/"))


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
        if link is None or link.state == ABSENT:
            return f"drift: fabric netdev {self.netdev} absent"
        if link.state == "admin-down":
            return f"drift: fabric netdev {self.netdev} observed administratively down"
        if link.state != UP:
            return f"drift: fabric netdev {self.netdev} observed without carrier ({link.operstate})"
        if self.address not in link.addresses:
            return f"drift: fabric netdev {self.netdev} does not hold {self.address}"
        if link.mtu != self.mtu:
            return f"drift: fabric netdev {self.netdev} has MTU {link.mtu}, expected {self.mtu}"
        for port in self.rdma_ports:
            state = f.rdma_ports.get(port, ABSENT)
            if not port_active(state):
                return f"drift: RDMA port {port} observed {state}"
        return None
