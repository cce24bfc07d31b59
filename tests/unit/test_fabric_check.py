"""The fabric check's message when the netdev named in the stack exists but another interface
holds the node's fabric address (the ranks would bind the named one and talk over another
network: found with two Docker networks, whose netdev names follow no order). The rendered
script runs here with a stand-in `ip` on PATH and `lo` as the named netdev."""

from __future__ import annotations

import os
import subprocess

from components.render import render

IP_STUB = """#!/bin/sh
case "$*" in
  "-o link show dev lo") echo "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN" ;;
  "-o -4 addr show dev lo") echo "1: lo    inet 127.0.0.1/8 scope host lo" ;;
  "-o -4 addr show") echo "1: lo    inet 127.0.0.1/8 scope host lo"
                     echo "2: eth0    inet 198.19.0.111/24 brd 198.19.0.255 scope global eth0"
                     echo "3: eth7    inet 198.19.0.11/24 brd 198.19.0.255 scope global eth7" ;;
esac
"""


def run_check(tmp_path, address: str) -> subprocess.CompletedProcess:
    (tmp_path / "ip").write_text(IP_STUB)
    (tmp_path / "ip").chmod(0o755)
    script = render("scripts/preflight-fabric.sh.j2", node_name="lab-1", netdev="lo", address=address, mtu=9000,
                    hcas=[], peers=[])
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"})


def test_the_fabric_address_on_another_netdev_names_it_and_the_fix(tmp_path):
    done = run_check(tmp_path, "198.19.0.11")
    assert done.returncode != 0
    assert "fabric netdev lo does not hold 198.19.0.11: eth7 does" in done.stderr
    assert "fix: set fabric.netdev (or this node's nodes[].fabric.netdev) to eth7" in done.stderr
    assert "nothing was stopped" in done.stderr


def test_an_address_no_interface_holds(tmp_path):
    done = run_check(tmp_path, "198.19.0.99")
    assert done.returncode != 0
    assert "nor does any interface of this node" in done.stderr and "eth7" not in done.stderr
