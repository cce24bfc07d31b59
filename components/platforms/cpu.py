"""No GPU: the lab's nodes, whose engines run on the CPU (vLLM's CPU build, llama.cpp) in the
host's memory."""

from components.platforms.base import Platform

PLATFORM = Platform("cpu", "no GPU: the lab's CPU engines", None, unified_memory=True, reserves_claims=False,
                    ray_memory_monitor=False)
