"""The launches: how a deployment's engine is spread over its nodes (`topology:` in a stack file),
one module each behind one interface (base.py). Every consumer of a deployment's ranks (its units,
the engine probe, the venv's verify, the config's cross-checks) asks its launch, never the topology."""

from __future__ import annotations

from typing import Literal

from components.launches.base import DeploymentSpec, Launch, Rank
from components.launches.native import Native
from components.launches.ray import RayLaunch
from components.launches.single import Single

# What `topology:` takes (the schema's type): the names of LAUNCHES (tests/unit/test_launches.py).
Topology = Literal["single", "ray", "native"]

LAUNCHES: dict[str, Launch] = {launch.name: launch for launch in (Single(), RayLaunch(), Native())}


def launch_of(d: DeploymentSpec) -> Launch:
    return LAUNCHES[d.topology]


__all__ = ["LAUNCHES", "Launch", "Rank", "Topology", "launch_of"]
