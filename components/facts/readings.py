"""The node's resources as its scripts read them, each in one shell: memory (/proc/meminfo), the
GPUs (nvidia-smi's query) and the driver (nvidia-smi's header: its version and the highest CUDA
it runs). The preflight, the status view and the memory release include these shells, so a
figure means the same wherever it is shown."""

from __future__ import annotations

from components.facts.base import Reading

MEMINFO = Reading("memory", "scripts/facts/meminfo.sh.j2", "meminfo_kb",
                  ('/meminfo"', "/proc/meminfo", "^MemAvailable:", "^MemTotal:"))
GPUS = Reading("gpus", "scripts/facts/gpus.sh.j2", "gpu_query", ("--query-gpu",))
DRIVER = Reading("driver", "scripts/facts/gpus.sh.j2", "nvidia_header", ("Driver Version: *", "CUDA Version: *"))

READINGS: tuple[Reading, ...] = (MEMINFO, GPUS, DRIVER)
