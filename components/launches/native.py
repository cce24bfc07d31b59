"""native: the engine's own multi-node launch, one rank per node, meeting at the head's rendezvous
port (`dist_port`) on its fabric address (SGLang --dist-init-addr, vLLM --master-addr/--master-port);
the engine's argv gives each rank its flags."""

from __future__ import annotations

from components.engines import engine_of
from components.launches.base import Launch, PortClaim


class Native(Launch):
    name = "native"

    def rank_nodes(self, d):
        return list(d.nodes)

    def port_claims(self, d, key):
        return [PortClaim(d.nodes[0], d.dist_port, f"{key}.dist_port",
                          f"the {engine_of(d).dist_port_what} of deployment '{d.name}'")]
