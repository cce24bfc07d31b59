"""Which netdev is the fabric, from every machine's facts: the one with RDMA devices, else (the
lab) the netdev off the default route whose addresses on all the machines share one subnet.
Per machine: its netdev there, its fabric address, both PCIe twins of the port and the RoCE v2
GID index; for the stack: the common names, and a node's own only where they differ."""

from __future__ import annotations

import ipaddress
from collections import Counter
from dataclasses import dataclass

from components.discover.facts import DiscoveryError, MachineFacts, roce_v2_gid_index

# Interfaces a container runtime or a hypervisor makes: never a fabric.
VIRTUAL_PREFIXES = ("lo", "docker", "veth", "br-", "virbr", "cni", "flannel", "cali", "vxlan", "tailscale", "wg")


@dataclass(frozen=True)
class MachineFabric:
    netdev: str
    address: ipaddress.IPv4Interface
    mtu: int | None
    speed_mbps: int | None
    hcas: tuple[str, ...]
    gid_index: int | None


@dataclass(frozen=True)
class Fabric:
    subnet: ipaddress.IPv4Network
    machines: dict[str, MachineFabric]      # host → its fabric

    def common(self, attribute: str):
        """The value most machines have (ties: the first machine's)."""
        return Counter(getattr(m, attribute) for m in self.machines.values()).most_common(1)[0][0]


def candidates(facts: MachineFacts) -> list[tuple[str, ipaddress.IPv4Interface]]:
    """(netdev, address) pairs that can be a fabric: up, an IPv4 address, not the default route's
    netdev, not a bridge nor a runtime's virtual interface. RDMA-backed netdevs alone when there are."""
    found = [(d.name, a) for d in facts.netdevs.values()
             if d.operstate == "up" and d.name != facts.default_route and not d.bridge
             and not d.name.startswith(VIRTUAL_PREFIXES) for a in d.addresses]
    rdma = [(n, a) for n, a in found if facts.rdma_for(n)]
    return rdma or found


def choose(machines: list[MachineFacts], subnet: ipaddress.IPv4Network | None = None) -> Fabric | None:
    """The fabric of these machines: the subnet in which each has exactly one candidate address,
    all distinct. None for one machine without a candidate; an error when there is no such subnet
    for several machines, or more than one (then `subnet` picks it)."""
    per_host = {m.host: candidates(m) for m in machines}
    if all(not c for c in per_host.values()) and len(machines) == 1:
        return None
    subnets = {a.network for c in per_host.values() for _, a in c}
    fitting = [s for s in sorted(subnets) if _one_address_each(per_host, s)]
    if subnet is not None:
        if subnet not in fitting:
            raise DiscoveryError(f"--fabric-subnet {subnet}: not every machine has exactly one address in it "
                                 f"({_listing(per_host)}); fix: give the subnet the fabric addresses share")
        fitting = [subnet]
    if not fitting:
        raise DiscoveryError(f"no fabric: no subnet in which every machine has one address, up, off the default "
                             f"route ({_listing(per_host)}); fix: bring each machine's fabric link up with its "
                             f"address in one subnet, or discover the machines one at a time")
    if len(fitting) > 1:
        raise DiscoveryError(f"several subnets could be the fabric ({', '.join(map(str, fitting))}); "
                             f"fix: pass --fabric-subnet with the one the RoCE link uses")
    chosen = fitting[0]
    return Fabric(subnet=chosen, machines={m.host: _machine_fabric(m, per_host[m.host], chosen) for m in machines})


def _one_address_each(per_host: dict, subnet: ipaddress.IPv4Network) -> bool:
    addresses = [[a for _, a in c if a.network == subnet] for c in per_host.values()]
    ips = [a[0].ip for a in addresses if len(a) == 1]
    return len(ips) == len(per_host) and len(set(ips)) == len(ips)


def _listing(per_host: dict) -> str:
    return "; ".join(f"{host}: {', '.join(f'{n} {a}' for n, a in c) or 'none'}" for host, c in per_host.items())


def _machine_fabric(facts: MachineFacts, found: list, subnet: ipaddress.IPv4Network) -> MachineFabric:
    netdev, address = next((n, a) for n, a in found if a.network == subnet)
    devices = facts.rdma_for(netdev)
    gid_index = next((i for d in devices if (i := roce_v2_gid_index(d, address.ip)) is not None), None)
    link = facts.netdevs[netdev]
    return MachineFabric(netdev=netdev, address=address, mtu=link.mtu, speed_mbps=link.speed_mbps,
                         hcas=tuple(d.name for d in devices), gid_index=gid_index)
