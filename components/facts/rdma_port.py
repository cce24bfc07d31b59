"""An RDMA port's state (sysfs's text, "4: ACTIVE"), read by templates/scripts/facts/rdma_port.sh.j2."""

from __future__ import annotations

from components.facts.base import Fact, value


def rdma_port(hca: str) -> str:
    """"mlx5_0:1" (or "mlx5_0", port 1) → "mlx5_0/1", as sysfs lays it out."""
    name, _, port = hca.partition(":")
    return f"{name}/{port or '1'}"


def port_active(state: str) -> bool:
    return "ACTIVE" in state



FACT = Fact("rdma", "rdma_ports", "scripts/facts/rdma_port.sh.j2", "rdma_port", value, ("/sys/class/infiniband/",))
