"""The interface of a launch: which nodes run a rank of the engine, each rank's command line
(the engine's argv for that rank), the nodes whose rank answers the API, the ports it claims
besides the API's, whether it runs over a Ray cluster of its nodes, and the node counts it takes.

A new launch (an MPI launch, say) is one module here and its LAUNCHES entry; the engines that
support it name it in their `launches`, and their argv() gives each rank its flags."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, NamedTuple, Protocol

from components.engines import engine_of


class DeploymentSpec(Protocol):
    """What a launch reads of a deployment (config/schema.py DeploymentSpec, a floor above: the
    schema validates with the launches, so they take its deployments as plain values)."""
    name: str
    engine: str
    topology: str
    nodes: Sequence[str]
    executor: str
    dist_port: int


@dataclass(frozen=True)
class Rank:
    """One process of the engine: its rank (0: the head's), the node it runs on, its command line
    (argv[0] a program name: the runtime says where it lives)."""
    rank: int
    node: str
    argv: tuple[str, ...]


class PortClaim(NamedTuple):
    """A port the launch binds on a node, with the stack key that sets it (config cross-checks)."""
    node: str
    port: int
    key: str
    what: str


class Launch:
    name: ClassVar[str]
    # It runs over a Ray cluster of the deployment's nodes (components/resources/cluster.py).
    ray_cluster: ClassVar[bool] = False
    # Its nodes talk over the fabric: it needs the fabric section, each node's fabric address and
    # the fabric check between them.
    spans_nodes: ClassVar[bool] = True

    def layout_problem(self, d: DeploymentSpec) -> str | None:
        """Why the deployment's nodes or executor do not suit this launch (schema message with the fix)."""
        if problem := self.node_count_problem(d):
            return problem
        if d.executor == "head" and not self.ray_cluster:
            return "executor: 'head' only applies to topology 'ray'; fix: remove it"
        return None

    def node_count_problem(self, d: DeploymentSpec) -> str | None:
        if len(d.nodes) < 2:
            return f"topology: '{self.name}' needs at least two nodes; fix: add a node or use 'single'"
        return None

    def rank_nodes(self, d: DeploymentSpec) -> list[str]:
        """The node of each rank, in rank order: the nodes that run the deployment's engine unit."""
        return list(d.nodes[:1])

    def ranks(self, d: DeploymentSpec, model_path: str, head_address: str | None) -> list[Rank]:
        """Every rank with its command line: the one list the units run and the engine probe checks."""
        engine = engine_of(d)
        return [Rank(r, node, tuple(engine.argv(d, model_path, r, head_address)))
                for r, node in enumerate(self.rank_nodes(d))]

    def api_nodes(self, d: DeploymentSpec) -> list[str]:
        """The nodes whose rank listens on the API port (they claim it)."""
        return self.rank_nodes(d) if engine_of(d).api_on_every_rank else list(d.nodes[:1])

    def port_claims(self, d: DeploymentSpec, key: str) -> list[PortClaim]:
        """The ports it binds besides the API's; key: the deployment's key path (deployments[i])."""
        return []
