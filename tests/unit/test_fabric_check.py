"""The fabric check's message when the netdev named in the stack exists but another interface
holds the node's fabric address (the ranks would bind the named one and talk over another
network: found with two Docker networks, whose netdev names follow no order). The rendered
script runs here with a stand-in `ip` on PATH and `lo` as the named netdev."""

from __future__ import annotations

import os
import subprocess

from components.steps.render import render

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
                    hcas=[], hca_names=[], hcas_key="fabric.hcas", peers=[])
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


# ---------------------------------------------------------------------------------------------
# MTUs: the node's against fabric.mtu and its peers', and frames of the full MTU to each peer.
# Stand-ins on PATH: `ssh` (the peer answers `cat .../mtu` with PEER_MTU) and `ping` (frames
# that must not be fragmented, -M do, are lost when JUMBO_LOST is set).

SSH_STUB = '#!/bin/sh\necho "$PEER_MTU"\n'
PING_STUB = '#!/bin/sh\ncase "$*" in *"-M do"*) [ -z "$JUMBO_LOST" ] ;; *) true ;; esac\n'
PEER = dict(peer_name="lab-2", peer_address="198.19.0.12", peer_user="root", peer_key="/root/.ssh/id_ed25519",
            peer_host_key="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPRTDOYX0EbHaFlesNRb4u2zayIVA/2Yw/GedRwZ+NTm",
            netdev="eth1")


def lo_mtu() -> int:
    return int(open("/sys/class/net/lo/mtu").read())


def run_with_peer(tmp_path, mtu: int, peer_mtu: str, jumbo_lost: bool = False) -> subprocess.CompletedProcess:
    for name, text in (("ip", IP_STUB), ("ssh", SSH_STUB), ("ping", PING_STUB)):
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(0o755)
    script = render("scripts/preflight-fabric.sh.j2", node_name="lab-1", netdev="lo", address="127.0.0.1",
                    mtu=mtu, hcas=[], hca_names=[], hcas_key="fabric.hcas", peers=[PEER])
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "PEER_MTU": peer_mtu,
           "JUMBO_LOST": "1" if jumbo_lost else ""}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, env=env)


def test_an_mtu_that_differs_names_this_nodes_the_stacks_and_the_peers(tmp_path):
    done = run_with_peer(tmp_path, 9000, "9000")
    assert done.returncode != 0
    assert (f"fabric netdev lo has MTU {lo_mtu()}, but fabric.mtu is 9000; lab-2's eth1 has 9000; "
            in done.stderr), done.stderr
    assert "fix: ip link set dev lo mtu 9000 here" in done.stderr and "on node lab-1; nothing was stopped" in done.stderr


def test_a_peer_whose_mtu_cannot_be_read_is_said_so(tmp_path):
    done = run_with_peer(tmp_path, 9000, "")     # the stand-in ssh answers nothing
    assert "lab-2's eth1 has an MTU not read (no SSH over the fabric)" in done.stderr, done.stderr


def test_full_frames_lost_on_the_way_name_both_mtus_and_the_switch(tmp_path):
    done = run_with_peer(tmp_path, lo_mtu(), "1500", jumbo_lost=True)
    assert done.returncode != 0
    said = done.stderr
    assert f"frames of {lo_mtu()} bytes (fabric.mtu) do not reach lab-2 (198.19.0.12) whole" in said, said
    assert f"lo here has {lo_mtu()}, lab-2's eth1 has 1500" in said and "the switch ports" in said


def test_equal_mtus_and_full_frames_pass(tmp_path):
    done = run_with_peer(tmp_path, lo_mtu(), str(lo_mtu()))
    assert done.returncode == 0, done.stderr
    assert f"peers answer with {lo_mtu()}-byte frames" in done.stderr


# ---------------------------------------------------------------------------------------------
# The RDMA devices of the port (a DGX Spark's: two PCIe functions, domains 0000 and 0002), read
# from a sysfs laid out as the kernel does, in a directory of its own.

SPARK_IP_STUB = """#!/bin/sh
case "$*" in
  "-o link show dev enp1s0f1np1") echo "4: enp1s0f1np1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 state UP" ;;
  "-o -4 addr show dev enp1s0f1np1") echo "4: enp1s0f1np1    inet 192.168.200.12/24 scope global enp1s0f1np1" ;;
esac
"""


def spark_sysfs(root):
    """rocep1s0f1 / roceP2p1s0f1: the twins of the cabled port; rocep1s0f0: the other port, one
    adapter (one sys_image_guid); mlx5_9: another adapter at the same bus, slot and function."""
    def pci(domain: str, fn: str, rdma: str, guid: str):
        dev = root / "devices" / f"pci{domain}:00" / f"{domain}:01:00.{fn}"
        ib = dev / "infiniband" / rdma
        (ib / "ports" / "1").mkdir(parents=True)
        (ib / "ports" / "1" / "state").write_text("4: ACTIVE\n")
        (ib / "sys_image_guid").write_text(guid + "\n")
        (ib / "device").symlink_to(dev)
        (root / "class" / "infiniband").mkdir(parents=True, exist_ok=True)
        (root / "class" / "infiniband" / rdma).symlink_to(ib)
        return dev
    guid = "4cbb:4703:00c0:ffee"
    cabled = pci("0000", "1", "rocep1s0f1", guid)
    pci("0002", "1", "roceP2p1s0f1", guid)
    pci("0000", "0", "rocep1s0f0", guid)
    pci("0003", "1", "mlx5_9", "0000:0000:0000:0001")
    net = root / "class" / "net" / "enp1s0f1np1"
    net.mkdir(parents=True)
    (net / "operstate").write_text("up\n")
    (net / "flags").write_text("0x1003\n")     # IFF_UP among them
    (net / "carrier").write_text("1\n")
    (net / "mtu").write_text("9000\n")
    (net / "device").symlink_to(cabled)


def run_spark_check(tmp_path, hcas: list[str]) -> subprocess.CompletedProcess:
    sysfs = tmp_path / "sys"
    spark_sysfs(sysfs)
    (tmp_path / "ip").write_text(SPARK_IP_STUB)
    (tmp_path / "ip").chmod(0o755)
    script = render("scripts/preflight-fabric.sh.j2", node_name="spark-1a32", netdev="enp1s0f1np1",
                    address="192.168.200.12", mtu=9000, hcas=hcas, hca_names=[h.split(":")[0] for h in hcas],
                    hcas_key="fabric.hcas", peers=[])
    assert script.count("\nsysfs=/sys\n") == 1
    script = script.replace("\nsysfs=/sys\n", f"\nsysfs={sysfs}\n")
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"})


def test_one_twin_listed_warns_naming_the_other_and_the_key(tmp_path):
    done = run_spark_check(tmp_path, ["rocep1s0f1"])
    assert done.returncode == 0, done.stderr
    [warning] = [line for line in done.stderr.splitlines() if "WARNING" in line]
    assert ("WARNING: RDMA device roceP2p1s0f1 (0002:01:00.1) is part of the port of enp1s0f1np1 (with "
            "rocep1s0f1, 0000:01:00.1) but not in fabric.hcas on node spark-1a32") in warning
    assert warning.endswith("fix: add roceP2p1s0f1 to fabric.hcas")


def test_the_netdevs_own_device_unlisted_warns_too(tmp_path):
    done = run_spark_check(tmp_path, ["roceP2p1s0f1:1"])
    assert done.returncode == 0, done.stderr
    assert "fix: add rocep1s0f1 to fabric.hcas" in done.stderr and "roceP2p1s0f1 to" not in done.stderr


def test_both_twins_listed_warn_of_nothing(tmp_path):
    done = run_spark_check(tmp_path, ["rocep1s0f1", "roceP2p1s0f1"])
    assert done.returncode == 0 and "WARNING" not in done.stderr, done.stderr
    assert "MTU 9000, RDMA ports active" in done.stderr
