"""DGX Spark's GB10: one Blackwell GPU on 128 GB of memory it shares with the host (about 120 GB
usable), ConnectX-7 ports that show as PCIe twins."""

from components.platforms.base import Platform

PLATFORM = Platform("gb10", "DGX Spark's GB10, ~120 GB of 128 unified", "GB10", unified_memory=True,
                    reserves_claims=True, ray_memory_monitor=True, checks_memory_release=True, twin_hca_ports=True)
