"""Memory released before a swap starts (issue 34; templates/scripts/_memory_release.sh.j2), on the
real engine and a real kernel: an engine whose memory stays held after its stop makes the swap stop
with the figures and roll back, the previous engine serving again; without the leak the same swap
goes through.

The engine: llama.cpp's llama-server (the lab stack's tiny-gguf deployment, alone on lab-1 as its
own stack, memory_release turned on: the lab's gpu.kind cpu has it off). It stops in about a
second and starts in seconds, and its own memory is small beside the leak.

The leak: a file in a tmpfs of the node written by a process placed in the engine container's
cgroup, as an engine run with --ipc host leaves a file in the host's /dev/shm (the node's own
/dev/shm is 64 MB, hence a tmpfs of its own). Its pages are shared memory charged to the engine,
which the check counts as held, and they outlive the engine's stop.

Sizes, against the noise: the lab's nodes read the host's /proc/meminfo (23 GiB), and the other
pair's tests start and stop engines meanwhile. The check decides in a short window: from its
reading `before` (just before the stop) to its readings TIMEOUT_S after the stop. The swap goes
through wrongly only if the host gives back more than LEAK_GB - BOUND_GB (4.5 GB) in that window;
a swap without the leak stops wrongly only if the host takes more than BOUND_GB (2.5 GB) and keeps
it at every reading. The host's MemAvailable sampled every 0.5 s through a cold CI run's lab start
and test suite (2026-12-07, 50 min: MemAvailable 10.3 to 24.3 GB) rose by up to 5.5 GB within 5 s
(the other pair's engines stopping together) and fell by at most 2.2 GB: over every window of a
1-3 s stop and a 4 s wait, 0.2-0.3 % would have passed wrongly with these sizes and none failed
wrongly (6 GB and a 2 GB bound: 0.4-0.7 % and 0.1-0.6 %). A larger leak crowds the host: the test
writes it only once MemAvailable leaves FLOOR_GB beside it, and removes it as soon as the swap
failed."""

from __future__ import annotations

import re
import shlex

import pytest
import yaml

from components import names
from tests.lab import topology as lab
from tests.lab.helpers import LAB_CONFIG, Stack, completion, deployment, require_lab, sh
from tests.wait import wait_until

pytestmark = pytest.mark.lab
LAB_STATE = "clean"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE1, = lab.nodes(1)
GGUF = deployment("tiny-gguf")
UNIT, CONTAINER = names.engine_unit(GGUF.name), names.engine_container(GGUF.name)
LEAK_GB, BOUND_GB, TIMEOUT_S = 7, 2.5, 4
FLOOR_GB = 4   # what the host keeps beside the leak
GB = 10**9
# The tmpfs the leak is written in (removed by the test), and the file.
LEAK_DIR = "/run/memory-release-test"
LEAK_FILE = f"{LEAK_DIR}/held"
# The swap: the engine restarted with one more flag (a new unit text).
SWAP_FLAGS = ["--batch-size", "256"]
HELD = re.compile(r"(?P<unit>\S+) held (?P<held>\d+) MB; (?P<timeout>\d+) s after its stop MemAvailable is "
                  r"(?P<now>\d+) MB, short of the (?P<due>\d+) MB due \(it was (?P<before>\d+) MB; "
                  r"bound (?P<bound>\d+) MB\)")
BACK = re.compile(r"(?P<unit>\S+) stopped: (?P<held>\d+) MB back \(MemAvailable (?P<before>\d+) -> (?P<now>\d+) MB\)")


def llama_cpp_alone() -> dict:
    """The lab stack's llama.cpp deployment alone on lab-1 (its image and model only), its swaps
    checked for memory; no watchdog or benchmark (nothing but the swap restarts or loads it)."""
    c = yaml.safe_load(LAB_CONFIG.read_text())["config"]
    [d] = [d for d in c["blackwell-serving:deployments"] if d["name"] == GGUF.name]
    d["memory_release"] = {"enabled": True, "bound_gb": BOUND_GB, "timeout_s": TIMEOUT_S}
    d["watchdog"], d["benchmark"] = {"enabled": False}, {"enabled": False}
    c["blackwell-serving:deployments"] = [d]
    c["blackwell-serving:images"] = [i for i in c["blackwell-serving:images"] if i["name"] == d["image"]]
    c["blackwell-serving:models"] = [m for m in c["blackwell-serving:models"] if m["name"] == d["model"]]
    c["blackwell-serving:nodes"] = c["blackwell-serving:nodes"][:1]
    for key in ("fabric", "gateway", "retire", "keep", "ray", "monitoring"):
        c.pop(f"blackwell-serving:{key}", None)
    return c


def swap(c: dict) -> None:
    c["blackwell-serving:deployments"][0]["extra_args"] += SWAP_FLAGS


def engine_args() -> str:
    return sh(NODE1, f"docker inspect --format '{{{{json .Args}}}}' {shlex.quote(CONTAINER)}")


def leak_from_the_engine(size_gb: int) -> int:
    """Write size_gb into a tmpfs of the node from within the engine container's memory cgroup (v1's
    on the lab's hybrid host, else v2's; the path as the check resolves it); returns the shared
    memory the cgroup then holds, in bytes."""
    q = shlex.quote
    script = f"""set -e
pid=$(docker inspect --format '{{{{.State.Pid}}}}' {q(CONTAINER)})
if [ -d /sys/fs/cgroup/memory ]; then
  root=/sys/fs/cgroup/memory; cg=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {{ print $3 }}' "/proc/$pid/cgroup")
else
  root=/sys/fs/cgroup; cg=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
fi
while [ ! -r "$root$cg/memory.stat" ] && [ "${{cg#/*/}}" != "$cg" ]; do cg="/${{cg#/*/}}"; done
mkdir -p {q(LEAK_DIR)}
mountpoint -q {q(LEAK_DIR)} || mount -t tmpfs -o size={size_gb + 1}g memory-release-test {q(LEAK_DIR)}
sh -c 'echo $$ > "$1/cgroup.procs" && exec head -c "$2" /dev/zero > "$3"' leak "$root$cg" {size_gb * GB} {q(LEAK_FILE)}
awk '$1 == "shmem" || $1 == "total_shmem" {{ if ($2 > m) m = $2 }} END {{ printf "%.0f", m }}' "$root$cg/memory.stat"
"""
    return int(sh(NODE1, f"bash -c {q(script)}"))


def release_leak() -> None:
    q = shlex.quote
    sh(NODE1, f"rm -f {q(LEAK_FILE)}; if mountpoint -q {q(LEAK_DIR)}; then umount {q(LEAK_DIR)}; fi; "
              f"rm -rf {q(LEAK_DIR)}")


def mem_available_gb() -> float:
    return int(sh(NODE1, "awk '$1 == \"MemAvailable:\" { print $2 }' /proc/meminfo")) * 1024 / GB


def answers() -> bool:
    return bool(completion(GGUF.served_name, GGUF.port)["choices"])


@pytest.fixture(scope="module")
def lab_clean():
    require_lab(NODE1)


def test_a_swap_waits_for_the_old_engines_memory_and_rolls_back_while_it_is_held(lab_clean, tmp_path):
    stack = Stack(tmp_path, "lab-memory-release", lambda c: None, config=llama_cpp_alone())
    try:
        up = stack.run("up", "--yes", "--skip-preview")
        assert up.returncode == 0, (up.stdout + up.stderr)[-4000:]
        assert answers()
        first_args = engine_args()

        # The old engine holds LEAK_GB more than it gives back at its stop: the swap must not start.
        wait_until(lambda: mem_available_gb() >= LEAK_GB + FLOOR_GB, 600, "room on the host for the leak",
                   seen=lambda: f"MemAvailable {mem_available_gb():.1f} GB", every_s=5)
        held = leak_from_the_engine(LEAK_GB)
        assert held >= LEAK_GB * GB, f"the leak is not charged to the engine's cgroup: shmem {held} B"
        stack.change(swap)
        up = stack.run("up", "--yes", "--skip-preview")
        release_leak()
        out = up.stdout + up.stderr
        assert up.returncode != 0, out[-4000:]
        found = HELD.search(" ".join(out.split()))
        assert found, out[-6000:]
        figures = {k: int(v) for k, v in found.groupdict().items() if k != "unit"}
        print("the failed swap's figures:", found.group(0))
        assert found.group("unit") == UNIT and figures["held"] >= LEAK_GB * 1000, figures
        assert figures["bound"] == BOUND_GB * 1000 and figures["now"] < figures["due"], figures
        assert "The run was rolled back" in out and f"Put the previous {UNIT} back on lab-1" in out, out[-6000:]
        assert "NOT put back" not in out, out[-6000:]
        # The previous engine serves again, with its own flags (the check stopped the step before the new start).
        assert answers()
        assert engine_args() == first_args and SWAP_FLAGS[0] not in first_args

        # Nothing held any more: the same swap goes through, and says what came back.
        up = stack.run("up", "--yes", "--skip-preview")
        out = up.stdout + up.stderr
        assert up.returncode == 0, out[-4000:]
        back = BACK.search(" ".join(out.split()))
        assert back and back.group("unit") == UNIT, out[-6000:]
        print("the swap's figures:", back.group(0))
        assert answers()
        assert SWAP_FLAGS[0] in engine_args()
    finally:
        release_leak()
        stack.destroy()
