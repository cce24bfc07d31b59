"""ray: a Ray cluster over the deployment's nodes (its head on the first), and one engine process on
the head that spreads its ranks over the cluster (executor ray) or keeps them on the head's GPUs
(executor head). The cluster's units and ports are components/resources/cluster.py's; its ports
per node are checked across deployments in config/crosscheck.py (one cluster per node)."""

from __future__ import annotations

from components.launches.base import Launch


class RayLaunch(Launch):
    name = "ray"
    ray_cluster = True
