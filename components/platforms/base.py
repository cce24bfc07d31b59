"""What the rest of the package asks of a GPU kind (components/platforms: one module per kind)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Platform:
    kind: str                 # what `gpu.kind` says
    title: str                # in the stack reference
    smi_name: str | None      # a substring of nvidia-smi's name of its GPU; None: no NVIDIA GPU
    # Its GPU allocates from the host's memory: the engines, Ray's object store and the OS share
    # MemTotal (the fit counts the object store there; the preflight reads MemAvailable; the
    # memory-pressure alert watches it).
    unified_memory: bool
    # Its engines reserve what they claim (memory_fraction of the node) from that shared memory:
    # the config adds the claims up against the node's memory_gb (a CPU engine's KV cache is set
    # by env, its claim arithmetic says nothing of what it takes).
    reserves_claims: bool
    # Ray's memory monitor must watch it: the GPU's allocations are the host's (a CPU engine's too,
    # but the lab keeps Ray's defaults).
    ray_memory_monitor: bool
    # A swap waits for the old engine's memory by default (MemoryReleaseSpec): its engine is alone
    # with the host's memory.
    checks_memory_release: bool = False
    # Its fabric ports come as PCIe twins (DGX Spark's ConnectX-7: one port, two functions on two
    # PCIe domains), which NCCL's HCA list must name together (config/sanity.py twin_warnings).
    twin_hca_ports: bool = False

    @property
    def has_gpu(self) -> bool:
        """An NVIDIA GPU the driver lists (else the node's cores serve, shared by its processes)."""
        return self.smi_name is not None
