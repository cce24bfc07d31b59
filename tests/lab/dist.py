"""Image and model copies between lab nodes as ImageSync and ModelCache run them, and the layer
registry's steps (components/resources/layer_registry.py): the real templates rendered for a source and a
peer, run on the source node over SSH (stdin empty, as components/steps/remote.py runs them), with the
bytes the source sent on its fabric interface.
Shared by tests/lab/test_lab_image_layers.py and bench/dist_bench.py."""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from dataclasses import dataclass

from components.config.schema import DEFAULT_PEER_KEY, LayerRegistry
from components.resources.image import staging_dir
from components.resources.layer_registry import fill_script, registry_repo, registry_scripts
from components.steps.render import render
from tests.lab import topology as lab

STATE_DIR = "/var/lib/blackwell-serving"
# The copies go to the lab nodes' fabric addresses (the bench's lab-3 and lab-4 too, in no stack):
# the lab's own fabric interface carries them.
FABRIC_NETDEV = lab.FABRIC_IFACE
# The layer registry as the lab runs it: the registry image prepare.sh regimage pushed to the lab
# registry (the nodes reach no Docker Hub), on the default port and storage.
LAYER_REGISTRY = LayerRegistry(image="198.18.0.1:5000/lab/registry:2.8")


def peer_values(peer: lab.Node) -> dict:
    return dict(peer_name=f"lab-{peer.index}", peer_address=peer.fabric_ip, peer_user="root",
                peer_host_key=peer.host_public_key, peer_key=DEFAULT_PEER_KEY)


def sync_image_script(tag: str, peer: lab.Node, *, registry: str | None = None) -> str:
    """registry: the image's name (its repository there) when the copy may use the layer registry."""
    via = dict(registry_port=LAYER_REGISTRY.port, registry_repo=registry_repo(registry)) if registry else {}
    return render("scripts/sync-image.sh.j2", tag=tag, staging_dir=staging_dir(STATE_DIR), **via,
                  **peer_values(peer))


def layer_registry_scripts(node: lab.Node) -> tuple[str, str]:
    """The start and the remove script of the layer registry on `node`."""
    return registry_scripts(LAYER_REGISTRY, f"lab-{node.index}")


def fill_layer_registry_script(tag: str, name: str) -> str:
    """The push that keeps image `tag` (image name `name`) in the layer registry."""
    return fill_script(tag, LAYER_REGISTRY.port, name)


def old_sync_image_script(tag: str, peer: lab.Node) -> str:
    """The method before issue 14: the whole image, docker save | ssh | docker load."""
    script = sync_image_script(tag, peer)
    layered = "if command -v python3 >/dev/null 2>&1 && peer command -v python3"
    assert layered in script, "sync-image.sh.j2 changed: update old_sync_image_script"
    return script.replace(layered, "if false && peer command -v python3")


def tx_bytes(node: lab.Node) -> int:
    return int(ssh(node, f"cat /sys/class/net/{FABRIC_NETDEV}/statistics/tx_bytes").stdout)


def ssh(node: lab.Node, command: str, *, input: str | None = None, timeout: int = 1800,
        check: bool = True) -> subprocess.CompletedProcess:
    run = subprocess.run(node.ssh_argv(command), input=input, capture_output=True, text=True, timeout=timeout)
    if check and run.returncode != 0:
        raise AssertionError(f"{node.name}: {command!r} exited {run.returncode}: {run.stderr[-3000:]}")
    return run


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    wall_s: float
    fabric_bytes: int

    def value(self, key: str) -> str:
        m = re.search(rf"^{re.escape(key)}=(.*)$", self.stdout, re.M)
        return m.group(1) if m else ""


def put_script(node: lab.Node, script: str, path: str) -> None:
    ssh(node, f"cat > {path}", input=script)


def run_script(node: lab.Node, script: str, *, timeout: int = 3600) -> Run:
    """The script on `node` as a step runs it, with the bytes `node` sent on the fabric."""
    # A path of its own: the bench runs several copies from one node at once.
    path = f"/tmp/bws-dist-step-{uuid.uuid4().hex}.sh"
    put_script(node, script, path)
    before = tx_bytes(node)
    t0 = time.monotonic()
    run = ssh(node, f"bash {path} </dev/null; rc=$?; rm -f {path}; exit $rc", timeout=timeout, check=False)
    wall = time.monotonic() - t0
    return Run(run.returncode, run.stdout, run.stderr, wall, tx_bytes(node) - before)
