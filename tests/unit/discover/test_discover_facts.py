"""Discovery's parsers on captured outputs of templates/scripts/discover.sh.j2 (data/README.md):
the facts, the fabric chosen across machines, the engines found and what the stack gets."""

from __future__ import annotations

import ipaddress
import re
import subprocess
from pathlib import Path

import pytest

from components.discover.engines import engine_services, served
from components.discover.fabric import choose
from components.discover.facts import DiscoveryError, ipv4_mapped_gid, parse
from components.discover.nodes import fabric_item, gpu, node_item, node_name, service_items
from components.discover.probe import script
from components import names

DATA = Path(__file__).parent / "data"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICEvWJmRmEloEL70S2jUEXoPj0Ob7rHWBDbvqcLgNdih"


def facts(name: str, host: str | None = None):
    return parse(host or name, (DATA / f"{name}.txt").read_text())


def test_spark_facts_twins_and_roce_v2_gid():
    spark = facts("spark-1")
    assert spark.arch == "aarch64" and spark.hostname == "spark-1a32"
    assert [d.name for d in spark.rdma_for("enp1s0f1np1")] == ["rocep1s0f1", "roceP2p1s0f1"]
    assert [d.name for d in spark.rdma_for("enp1s0f0np0")] == ["rocep1s0f0", "roceP2p1s0f0"]
    assert spark.rdma_for("enP7s7") == []
    assert ipv4_mapped_gid(ipaddress.IPv4Address("192.168.200.12")) == "0000:0000:0000:0000:0000:ffff:c0a8:c80c"
    assert gpu(spark) == {"kind": "gb10", "count": 1, "memory_gb": 119.7}   # unified: the machine's memory


def test_spark_pair_fabric_is_the_rdma_port_with_both_twins():
    fabric = choose([facts("spark-1"), facts("spark-2")])
    assert str(fabric.subnet) == "192.168.200.0/24"      # not the Wi-Fi nor the LAN on the default route
    one = fabric.machines["spark-1"]
    assert (one.netdev, str(one.address), one.mtu, one.speed_mbps) == ("enp1s0f1np1", "192.168.200.12/24", 9000, 200000)
    assert one.hcas == ("rocep1s0f1", "roceP2p1s0f1") and one.gid_index == 3
    item = fabric_item(fabric)
    assert item.value == {"netdev": "enp1s0f1np1", "mtu": 9000, "prefix_len": 24,
                          "hcas": ["rocep1s0f1", "roceP2p1s0f1"], "gid_index": 3}


def test_a_node_on_the_other_port_gets_its_own_fabric_names():
    machines = [facts("spark-1"), facts("spark-2-port0", "spark-2")]
    fabric = choose(machines)
    first = node_item("spark-1", machines[0], KEY, "root", 22, None, fabric).value
    second = node_item("spark-2", machines[1], KEY, "root", 22, None, fabric).value
    assert "fabric" not in first
    assert second["fabric"] == {"netdev": "enp1s0f0np0", "hcas": ["rocep1s0f0", "roceP2p1s0f0"]}
    assert second["fabric_address"] == "192.168.200.13"


def test_lab_pair_fabric_without_rdma_is_the_shared_subnet_off_the_default_route():
    lab = [facts("lab-1"), facts("lab-2")]
    fabric = choose(lab)
    assert [m.netdev for m in fabric.machines.values()] == ["eth1", "eth1"]  # not docker0 (a bridge, same on both)
    assert fabric_item(fabric).value == {"netdev": "eth1", "mtu": 9000, "prefix_len": 24, "disable_ib": True,
                                         "infiniband_device": False}
    node = node_item("lab-1", lab[0], KEY, "root", 22, "tests/lab/.state/id_ed25519", fabric).value
    assert node == {"name": "lab-1", "host": "lab-1", "arch": "amd64",
                    "gpu": {"kind": "cpu", "count": 1, "memory_gb": 23.5}, "fabric_address": "198.19.0.11",
                    "ssh": {"user": "root", "private_key_path": "tests/lab/.state/id_ed25519", "host_key": KEY}}


def test_gpu_less_machine_alone_has_no_fabric_and_a_stack_name():
    box = facts("cpu-box")
    assert choose([box]) is None
    assert gpu(box) == {"kind": "cpu", "count": 1, "memory_gb": 62.7}
    assert node_name(None, box, set()) == "build-box-local"
    assert node_name(None, box, {"build-box-local"}) == "build-box-local-2"
    assert engine_services("build-box-local", box) == []


def test_machines_without_a_common_fabric_subnet_stop_with_the_fix():
    with pytest.raises(DiscoveryError, match="no fabric: .*fix: bring each machine's fabric link up"):
        choose([facts("spark-1"), facts("cpu-box")])


def test_fabric_subnet_must_fit_every_machine():
    with pytest.raises(DiscoveryError, match="--fabric-subnet 198.18.0.0/24: not every machine"):
        choose([facts("lab-1"), facts("lab-2")], ipaddress.IPv4Network("198.18.0.0/24"))


def test_rtx_box_gpus_and_its_llama_server():
    rtx = facts("rtxpro4")
    assert gpu(rtx) == {"kind": "rtx-pro-6000", "count": 4, "memory_gb": 95.5}
    [found] = engine_services("rtxpro", rtx)
    assert (found.service.name, found.port, found.model) == ("llama.service", 8080, "/models/qwen3-32b-q4.gguf")


def test_engines_of_a_spark_retire_keep_and_containers_apart():
    spark1, spark2 = facts("spark-1"), facts("spark-2")
    found = engine_services("spark-1", spark1) + engine_services("spark-2", spark2)
    # ssh.service's processes (someone's session) are never proposed; vllm-head is the unit's container.
    assert [(e.node, e.service.name) for e in found] == [
        ("spark-1", "vllm-cluster.service"), ("spark-1", "sglang-try"), ("spark-2", "vllm-embeddings.service")]
    retire, keep, notes = service_items(found)
    assert [r.value for r in retire] == [{"node": "spark-1", "unit": "vllm-cluster.service"}]
    assert "serves model zai-org/GLM-4.5-Air-FP8, port 8000" in retire[0].comments[0]
    assert [k.value for k in keep] == [{"node": "spark-2", "unit": "vllm-embeddings.service"}]
    assert "Qwen/Qwen3-Embedding-0.6B, port 8001" in keep[0].comments[0]
    assert "sglang-try on spark-1 serves model Qwen/Qwen3-8B, port 30000" in notes["spark-1"][0]


def test_an_engine_pattern_counts_the_labs_stand_ins():
    lab2 = facts("lab-2")
    assert engine_services("lab-2", lab2) == []
    [found] = engine_services("lab-2", lab2, [re.compile(r"http\.server")])
    assert found.service.name == "embeddings.service" and found.keep and found.model is None   # python -m: a module


def test_served_reads_the_usual_flags():
    assert served("vllm serve Qwen/Qwen3-8B --port 8001") == (8001, "Qwen/Qwen3-8B")
    assert served("text-generation-launcher --model-id meta/x --port=3000") == (3000, "meta/x")
    assert served("python3 -m http.server 8000") == (None, None)


def test_unreadable_line_names_the_host_and_the_line():
    with pytest.raises(DiscoveryError, match=r"spark: the discovery script's line 2 cannot be read"):
        parse("spark", "arch\taarch64\nnetdev\teth0\n")
    with pytest.raises(DiscoveryError, match="architecture 'riscv64'"):
        parse("box", "arch\triscv64\n")


def test_unknown_gpu_kind_stops_with_the_fix():
    box = parse("box", "arch\tx86_64\nmemory_kb\t1000\ngpu\tNVIDIA H100 80GB HBM3, 81559 MiB\n")
    with pytest.raises(DiscoveryError, match=r"box: GPUs \['NVIDIA H100 80GB HBM3'\] are not one kind"):
        gpu(box)


def test_the_script_is_posix_sh_and_runs_here():
    """shellcheck as POSIX sh, then a real run under /bin/sh (dash here) on this machine, read-only:
    its output parses."""
    lint = subprocess.run(["shellcheck", "-s", "sh", "-"], input=script(), capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    run = subprocess.run(["sh", "-s", names.PREFIX], input=script(), capture_output=True, text=True, timeout=120)
    here = parse("localhost", run.stdout)
    assert here.memory_kb > 0 and "lo" in here.netdevs
