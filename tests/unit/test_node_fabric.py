"""Per-node fabric overrides (nodes[].fabric): a Spark whose netdev, HCAs or GID index differ
from the stack's fabric (re-cabled to the other port) says so, and everything derived from the
fabric on that node follows — the engine's and Ray's environment, the fabric link check, the
all-reduce preflight — while the other nodes keep the stack's. Bad overrides are one ConfigError
with the key path and the fix, on both paths."""

from __future__ import annotations

import copy

import pytest

from components.config.schema import NodeSpec
from components.resources.fabric import fabric_environment, node_fabric
from components.preflight.bandwidth import hang_fix
from tests.unit.config.stacks import P, both_paths_error, shipped_doc
from tests.unit.mocked import script_of, snapshot
from tests.unit.test_bandwidth import env_of, rank_lines
from tests.unit.test_graph import snap

OVERRIDE = {"netdev": "enP2p1s0f1np1", "hcas": ["roceP2p1s0f1", "rocep1s0f1"], "gid_index": 1}


def overridden(stack: str, **override):
    """The stack's spec with its second node's fabric overridden."""
    spec = snap(stack).spec
    second = spec.nodes[1]
    nodes = [spec.nodes[0], NodeSpec.model_validate({**second.model_dump(mode="json"),
                                                     "fabric": override or OVERRIDE})]
    return spec.model_copy(update={"nodes": nodes})


def test_the_node_uses_its_override_and_the_others_the_stacks_fabric():
    spec = overridden("spark-duo")
    head, second = spec.nodes
    assert node_fabric(spec.fabric, head) is spec.fabric
    mine = node_fabric(spec.fabric, second)
    assert (mine.netdev, mine.hcas, mine.gid_index) == ("enP2p1s0f1np1", ["roceP2p1s0f1", "rocep1s0f1"], 1)
    assert mine.mtu == spec.fabric.mtu and mine.bandwidth_check == spec.fabric.bandwidth_check
    env = fabric_environment(spec.fabric, second)
    assert env["NCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == env["UCX_NET_DEVICES"] == "enP2p1s0f1np1"
    assert env["NCCL_IB_HCA"] == "roceP2p1s0f1,rocep1s0f1" and env["NCCL_IB_GID_INDEX"] == "1"
    assert fabric_environment(spec.fabric, head)["NCCL_SOCKET_IFNAME"] == "enp1s0f1np1"


def test_keys_left_out_are_the_stacks():
    spec = overridden("spark-duo", gid_index=5)
    env = fabric_environment(spec.fabric, spec.nodes[1])
    assert env["NCCL_SOCKET_IFNAME"] == "enp1s0f1np1" and env["NCCL_IB_GID_INDEX"] == "5"
    assert env["NCCL_IB_HCA"] == ",".join(spec.fabric.hcas)


def test_the_units_the_checks_and_the_all_reduce_follow_the_override():
    s = snapshot("spark-duo", overridden("spark-duo"))
    worker = next(u for u in s.units if u.unit_name == "bws-qwen35-ray-worker.service")
    assert "NCCL_SOCKET_IFNAME=enP2p1s0f1np1" in worker.unit_text
    assert "NCCL_IB_HCA=roceP2p1s0f1,rocep1s0f1" in worker.unit_text
    head = next(u for u in s.units if u.unit_name == "bws-qwen35-ray-head.service")
    assert "NCCL_SOCKET_IFNAME=enp1s0f1np1" in head.unit_text
    # The link check of the node looks at its own netdev and RDMA ports.
    check = script_of(s.by_name("spark-5be3-fabric-check"))
    assert "enP2p1s0f1np1" in check and "roceP2p1s0f1" in check
    head_check = script_of(s.by_name("spark-1a32-fabric-check"))
    # The head's check looks at its own netdev; it names the worker's only to read its MTU.
    assert "\ndev=enp1s0f1np1\n" in head_check and "roceP2p1s0f1 " in head_check
    assert head_check.count("enP2p1s0f1np1") == 2
    assert "peer cat /sys/class/net/enP2p1s0f1np1/mtu" in head_check
    ranks = rank_lines(script_of(s.by_name("qwen35-bandwidth-check")))
    assert env_of(ranks[1])["NCCL_SOCKET_IFNAME"] == "enP2p1s0f1np1"
    assert env_of(ranks[0])["NCCL_SOCKET_IFNAME"] == "enp1s0f1np1"


def test_a_hang_names_each_nodes_own_settings():
    s = snapshot("spark-duo", overridden("spark-duo"))
    d = s.spec.deployments[0]
    fix = hang_fix(d, s.spec.fabric, [s.serving.nodes[n] for n in d.nodes], 0)
    assert "spark-5be3: NCCL_SOCKET_IFNAME=enP2p1s0f1np1 NCCL_IB_HCA=roceP2p1s0f1,rocep1s0f1 NCCL_IB_GID_INDEX=1" in fix
    assert "spark-1a32: NCCL_SOCKET_IFNAME=enp1s0f1np1 NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 NCCL_IB_GID_INDEX=3" in fix
    assert "nodes[].fabric" in fix


def test_the_observed_fabric_of_the_node_is_its_own():
    s = snapshot("spark-duo", overridden("spark-duo"))
    watched = repr(s.watches["spark-5be3"])
    assert "enP2p1s0f1np1" in watched and "roceP2p1s0f1/1" in watched


# ---------------------------------------------------------------------------------------------
# Validation, on the stack file and on the engine's config alike


def with_override(stack: str, index: int, fabric) -> dict:
    doc = shipped_doc(stack)
    doc["config"][P + "nodes"][index]["fabric"] = copy.deepcopy(fabric)
    return doc


def test_an_override_is_accepted_on_both_paths(tmp_path):
    from components.config import load_stack_file
    from tests.unit.config.stacks import load_engine_path, write_doc

    doc = with_override("spark-duo", 1, OVERRIDE)
    for spec in (load_stack_file(write_doc(tmp_path, doc)), load_engine_path(doc["config"])):
        assert spec.nodes[1].fabric.netdev == "enP2p1s0f1np1" and spec.nodes[0].fabric is None


@pytest.mark.parametrize("fabric,key,words", [
    ({}, "nodes[1].fabric", ["overrides nothing", "give netdev, hcas or gid_index"]),
    ({"hca": ["mlx5_0"]}, "nodes[1].fabric.hca", ["hcas"]),
    ({"netdev": "eth0; reboot"}, "nodes[1].fabric.netdev", []),
    ({"hcas": []}, "nodes[1].fabric.hcas", []),
    ({"hcas": ["mlx5_0", "mlx5_0"]}, "nodes[1].fabric.hcas", ["listed twice", "list each HCA once"]),
    ({"gid_index": 256}, "nodes[1].fabric.gid_index", []),
    ({"mtu": 1500}, "nodes[1].fabric.mtu", []),
])
def test_a_bad_override_is_refused_with_its_key_and_fix(tmp_path, fabric, key, words):
    both_paths_error(tmp_path, with_override("spark-duo", 1, fabric), P + key, *words)


def test_an_override_without_a_stack_fabric_is_refused(tmp_path):
    both_paths_error(tmp_path, with_override("rtxpro-quad", 0, {"netdev": "eth1"}), P + "nodes[0].fabric",
                     "the stack's fabric, which is absent", "add a fabric: section")


def test_hcas_where_the_stack_turns_rdma_off_are_refused(tmp_path):
    both_paths_error(tmp_path, with_override("lab", 1, {"hcas": ["mlx5_0"]}), P + "nodes[1].fabric.hcas",
                     "fabric.disable_ib is true", "remove nodes[1].fabric.hcas")
