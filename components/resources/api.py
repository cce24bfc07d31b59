"""What a deployment publishes for those that call its API (the gateway): its names, where its
head listens, how another node reaches that head, and its key. A caller reads these values; it
never works them out again from the stack config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pulumi

if TYPE_CHECKING:
    from components.config.schema import DeploymentSpec, NodeSpec


@dataclass(frozen=True)
class DeploymentApi:
    """name, served_name: the deployment's and its model's; head: the node its API runs on; bind,
    port: where it listens there; reach: how another node reaches the head (its fabric address,
    else its host); key: its API key (a Pulumi secret), None without one."""
    name: str
    served_name: str
    head: str
    bind: str
    port: int
    reach: str
    key: pulumi.Output[str] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, d: DeploymentSpec, head: NodeSpec, key: pulumi.Output[str] | None) -> "DeploymentApi":
        """Deployment d's, its head being `head` (d.nodes[0]) and its key resolved (or None)."""
        reach = str(head.fabric_address) if head.fabric_address is not None else head.host
        return cls(d.name, d.served_name, head.name, str(d.bind), d.port, reach, key)

    def address_from(self, node: str) -> str:
        """Where `node` reaches the API: loopback on the head itself (unless it listens on one
        address only), its bind address when it has one, else the head's reach."""
        if node == self.head:
            return "127.0.0.1" if self.bind == "0.0.0.0" else self.bind
        return self.bind if self.bind != "0.0.0.0" else self.reach
