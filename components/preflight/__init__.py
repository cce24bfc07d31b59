"""The checks that run on the nodes at preview, before anything changes on the machines: the
engine probe and the fabric check (``probes``), every node's GPUs and memory against what its
deployments claim (``resources``), and the optional all-reduce across a multi-node deployment's
nodes (``bandwidth``). Whether a model fits its layout is arithmetic with no node: ``sizing/``."""

from components.preflight.bandwidth import FabricBandwidth
from components.preflight.probes import EngineProbe, FabricCheck

__all__ = ["EngineProbe", "FabricBandwidth", "FabricCheck"]
