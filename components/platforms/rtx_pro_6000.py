"""RTX PRO 6000 Blackwell: discrete GPUs of 96 GB each in a PCIe host."""

from components.platforms.base import Platform

PLATFORM = Platform("rtx-pro-6000", "RTX PRO 6000 Blackwell, 96 GB each", "RTX PRO 6000", unified_memory=False,
                    reserves_claims=False, ray_memory_monitor=False)
