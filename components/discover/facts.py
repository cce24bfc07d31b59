"""What one machine told the discovery script (templates/scripts/discover.sh.j2), parsed: pure
functions of the script's text, so that they are tested on captured outputs."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from components.names import PREFIX

ARCHES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


class DiscoveryError(Exception):
    """A machine, or what it told us, that cannot become a stack: the message names the host and the fix."""


@dataclass(frozen=True)
class Gpu:
    name: str
    memory_mib: int | None          # None: not reported (GB10's unified memory: "[N/A]")


@dataclass(frozen=True)
class NetDev:
    name: str
    operstate: str
    mtu: int | None
    speed_mbps: int | None          # None: not reported (a virtual link, a link that is down)
    hardware: bool                  # a device (PCIe function) behind it
    bridge: bool
    addresses: tuple[ipaddress.IPv4Interface, ...]


@dataclass(frozen=True)
class Gid:
    index: int
    type: str                       # "RoCE v2", "RoCE v1", "IB/RoCE v1"
    gid: str


@dataclass(frozen=True)
class RdmaDevice:
    name: str                       # mlx5_0, rocep1s0f1
    pci: str                        # 0000:01:00.1
    netdevs: tuple[str, ...]
    ports: dict[int, str] = field(default_factory=dict)          # port → state ("4: ACTIVE")
    gids: dict[int, tuple[Gid, ...]] = field(default_factory=dict)  # port → its non-zero GIDs


@dataclass(frozen=True)
class Service:
    """A running unit (kind 'unit') or container (kind 'container') and its command lines."""
    kind: str
    name: str
    description: str
    command: str


@dataclass
class MachineFacts:
    host: str
    hostname: str = ""
    arch: str = ""
    memory_kb: int = 0
    gpus: list[Gpu] = field(default_factory=list)
    gpu_error: str | None = None
    default_route: str | None = None
    netdevs: dict[str, NetDev] = field(default_factory=dict)
    rdma: dict[str, RdmaDevice] = field(default_factory=dict)
    services: list[Service] = field(default_factory=list)
    docker: str = "absent"          # the daemon's version, "absent" or "unreachable"
    runtimes: tuple[str, ...] = ()

    @property
    def memory_gib(self) -> float:
        return self.memory_kb / 1024 / 1024

    def rdma_for(self, netdev: str) -> list[RdmaDevice]:
        """The RDMA devices of a netdev's port: the ones behind it and their PCIe twins (the same
        bus/device/function in another PCI domain: a GB10's ConnectX-7 shows each port twice)."""
        own = [d for d in self.rdma.values() if netdev in d.netdevs]
        functions = {_function(d.pci) for d in own}
        twins = [d for d in self.rdma.values() if d not in own and _function(d.pci) in functions]
        return sorted(own, key=lambda d: d.name) + sorted(twins, key=lambda d: d.name)


def _function(pci: str) -> str:
    """A PCI address without its domain: 0002:01:00.1 → 01:00.1."""
    return pci.split(":", 1)[1] if pci.count(":") == 2 else pci


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def _mib(text: str) -> int | None:
    """nvidia-smi's memory.total: '97887 MiB', '97887', or '[N/A]' / 'Not Supported'."""
    number = text.strip().split(" ")[0]
    return int(number) if number.isdigit() else None


def parse(host: str, text: str) -> MachineFacts:
    """MachineFacts from the script's stdout; a line it cannot read is an error, not a guess."""
    facts = MachineFacts(host=host)
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        kind, *f = line.split("\t")
        try:
            _read_line(facts, kind, f)
        except (IndexError, ValueError) as exc:
            raise DiscoveryError(f"{host}: the discovery script's line {number} cannot be read ({exc}): "
                                 f"{line[:200]!r}; fix: run the discovery script on it by hand "
                                 f"(python -m components.discover.probe | ssh {host} sh -s {PREFIX}) and report its output") from None
    if facts.arch not in ARCHES:
        raise DiscoveryError(f"{host}: architecture {facts.arch!r} is not one the stacks know (x86_64, aarch64); "
                             f"fix: discover amd64 or arm64 machines only")
    return facts


def _read_line(facts: MachineFacts, kind: str, f: list[str]) -> None:
    if kind == "arch":
        facts.arch = f[0]
    elif kind == "hostname":
        facts.hostname = f[0]
    elif kind == "memory_kb":
        facts.memory_kb = int(f[0])
    elif kind == "gpu":
        name, _, memory = f[0].rpartition(",")
        facts.gpus.append(Gpu(name=name.strip(), memory_mib=_mib(memory)))
    elif kind == "gpu_error":
        facts.gpu_error = f[0]
    elif kind == "default_route":
        facts.default_route = f[0] or None
    elif kind == "netdev":
        name, operstate, mtu, speed, hardware, bridge, addresses = f[:7]
        facts.netdevs[name] = NetDev(
            name=name, operstate=operstate, mtu=_int(mtu), speed_mbps=_int(speed), hardware=hardware == "1",
            bridge=bridge == "1",
            addresses=tuple(ipaddress.IPv4Interface(a) for a in addresses.split(",") if a))
    elif kind == "rdma":
        facts.rdma[f[0]] = RdmaDevice(name=f[0], pci=f[1], netdevs=tuple(n for n in f[2].split(",") if n))
    elif kind == "rdma_port":
        facts.rdma[f[0]].ports[int(f[1])] = f[2]
    elif kind == "gid":
        device, port = facts.rdma[f[0]], int(f[1])
        device.gids[port] = (*device.gids.get(port, ()), Gid(index=int(f[2]), type=f[3], gid=f[4]))
    elif kind == "service":
        facts.services.append(Service(kind="unit", name=f[0], description=f[1], command=f[2]))
    elif kind == "container":
        # docker ps quotes the command as a whole: "vllm serve …"
        command = f[2][1:-1] if len(f[2]) > 1 and f[2][0] == f[2][-1] == '"' else f[2]
        facts.services.append(Service(kind="container", name=f[0], description=f[1], command=command))
    elif kind == "docker":
        facts.docker = f[0]
        facts.runtimes = tuple(r for r in f[1].split(",") if r)
    else:
        raise ValueError(f"unknown fact kind {kind!r}")


def ipv4_mapped_gid(address: ipaddress.IPv4Address) -> str:
    """The RoCE v2 GID of an IPv4 address as sysfs writes it: ::ffff:a.b.c.d in 8 groups of 4 hex."""
    mapped = ipaddress.IPv6Address(f"::ffff:{address}")
    return ":".join(f"{mapped.packed[i]:02x}{mapped.packed[i + 1]:02x}" for i in range(0, 16, 2))


def roce_v2_gid_index(device: RdmaDevice, address: ipaddress.IPv4Address) -> int | None:
    """The GID index whose type is RoCE v2 and whose GID is the fabric address, IPv4-mapped."""
    wanted = ipv4_mapped_gid(address)
    for gids in device.gids.values():
        for gid in gids:
            if gid.type.strip().lower() == "roce v2" and gid.gid.lower() == wanted:
                return gid.index
    return None
