"""What a stack says about the machines themselves: fabric addresses (unique, one subnet, not
loopback, link-local or the management address), the directories we create and remove (never a
home or system directory), and Ray's object store within a unified-memory node. Each case is one
ConfigError naming the key path and the fix, on both paths (stack file, engine config)."""

from __future__ import annotations

import pytest

from tests.unit.config.stacks import P, both_paths_error, lab_one_engine_doc, lab_ray_doc, shipped_doc


def nodes(doc: dict) -> list[dict]:
    return doc["config"][P + "nodes"]


def test_two_nodes_with_one_fabric_address(tmp_path):
    doc = shipped_doc("spark-duo")
    nodes(doc)[1]["fabric_address"] = nodes(doc)[0]["fabric_address"]
    both_paths_error(tmp_path, doc, P + "nodes[1].fabric_address", "also the fabric address of spark-1a32",
                     "its own fabric netdev")


def test_fabric_addresses_in_two_subnets(tmp_path):
    doc = lab_one_engine_doc()
    nodes(doc)[1]["fabric_address"] = "198.19.7.12"
    both_paths_error(tmp_path, doc, P + "nodes", "2 subnets of /24", "198.19.0.0/24 (lab-1)",
                     "198.19.7.0/24 (lab-2)", "fabric.prefix_len")


@pytest.mark.parametrize("address, kind", [("127.0.0.2", "loopback"), ("169.254.3.4", "link-local"),
                                           ("0.0.0.0", "unspecified")])
def test_a_fabric_address_no_peer_can_reach(tmp_path, address, kind):
    doc = lab_one_engine_doc()
    nodes(doc)[0]["fabric_address"] = address
    both_paths_error(tmp_path, doc, P + "nodes[0].fabric_address", f"a {kind} address", "ip -4 addr show")


def test_the_management_address_as_fabric_address(tmp_path):
    doc = lab_one_engine_doc()
    nodes(doc)[0]["fabric_address"] = nodes(doc)[0]["host"]
    both_paths_error(tmp_path, doc, P + "nodes[0].fabric_address", "management address", "fabric netdev")


@pytest.mark.parametrize("path, what", [("/root", "a home directory"), ("/home/alice", "a home directory"),
                                        ("/home", "a home directory"), ("/var/lib", "a system directory"),
                                        ("/", "a system directory"), ("/etc/models", "inside the system's /etc"),
                                        ("/usr/share/models", "inside the system's /usr")])
def test_a_cache_directory_that_is_not_ours(tmp_path, path, what):
    doc = lab_one_engine_doc()
    doc["config"][P + "models"][0]["cache_dir"] = path
    both_paths_error(tmp_path, doc, P + "models[0].cache_dir", what, "a directory of our own")


def test_a_state_directory_that_is_a_home(tmp_path):
    doc = shipped_doc("rtxpro-quad")
    doc["config"][P + "state_dir"] = "/root/"
    both_paths_error(tmp_path, doc, P + "state_dir", "a home directory")


def test_a_ray_object_store_larger_than_the_node(tmp_path):
    doc = lab_ray_doc()
    doc["config"][P + "ray"] = {"object_store_gb": 64}
    both_paths_error(tmp_path, doc, P + "ray.object_store_gb", "does not fit in the 8 GB of lab-1", "a few GB")


def test_directories_of_our_own_under_system_trees_pass(tmp_path):
    from components.config.sanity import directory_problems
    from tests.unit.config.stacks import load_engine_path
    doc = lab_one_engine_doc()
    doc["config"][P + "models"][0]["cache_dir"] = "/var/lib/blackwell-serving/models"
    doc["config"][P + "state_dir"] = "/srv/blackwell"
    assert directory_problems(load_engine_path(doc["config"])) == []


# ---------------------------------------------------------------------------------------------
# What the deployments reserve on a unified-memory node, against its memory_gb


def test_deployment_claims_and_the_object_store_beyond_a_spark(tmp_path):
    doc = shipped_doc("spark-duo")
    doc["config"][P + "deployments"][0]["memory_fraction"] = 0.95
    doc["config"][P + "ray"]["object_store_gb"] = 10
    both_paths_error(tmp_path, doc, P + "deployments[0].memory_fraction", "node 'spark-1a32' cannot hold",
                     "memory_fraction 0.95 × 120 GB × 1 GPU (deployments[0].memory_fraction)",
                     "Ray object store 10 GB (ray.object_store_gb)", "= 124.0 GB of its 120 GB",
                     "fix: lower deployments[0].memory_fraction / ray.object_store_gb", "nodes[0].gpu.memory_gb")


def test_claims_that_fit_a_spark_and_a_cpu_node_pass():
    from components.config.sanity import claim_problems
    from tests.unit.config.stacks import load_engine_path
    assert claim_problems(load_engine_path(shipped_doc("spark-duo")["config"])) == []
    # A CPU engine's memory_fraction says nothing of what it takes: the lab is not held to it.
    doc = lab_ray_doc()
    doc["config"][P + "deployments"][0]["memory_fraction"] = 0.95
    doc["config"][P + "ray"] = {"object_store_gb": 4}
    assert claim_problems(load_engine_path(doc["config"])) == []


def test_one_selection_of_the_nodes_an_object_store_lives_on():
    """The config check, the preflight's claims and the stack fit's shares ask one function."""
    from components.config.sanity import node_claims, object_store_nodes
    from tests.unit.config.stacks import load_engine_path
    spec = load_engine_path(shipped_doc("spark-duo")["config"])
    [d] = spec.deployments
    assert object_store_nodes(spec, d) == d.nodes
    assert [c.key for c in node_claims(spec)[d.nodes[1]]] == ["deployments[0].memory_fraction",
                                                              "ray.object_store_gb"]
    rtx = load_engine_path(shipped_doc("rtxpro-quad")["config"])
    assert all(object_store_nodes(rtx, d) == [] for d in rtx.deployments)


# ---------------------------------------------------------------------------------------------
# The fabric's MTU: one key, no per-node override


def test_a_node_cannot_give_itself_another_mtu(tmp_path):
    doc = shipped_doc("spark-duo")
    nodes(doc)[1]["fabric"] = {"netdev": "enP2p1s0f1np1", "mtu": 1500}
    both_paths_error(tmp_path, doc, P + "nodes[1].fabric.mtu", "unknown key", "gid_index, hcas, netdev")


# ---------------------------------------------------------------------------------------------
# A DGX Spark's port listed by one of its two PCIe twins: a warning, the plan goes on


def spark_warnings(change) -> list[str]:
    from components.config.sanity import sanity_problems, sanity_warnings
    from tests.unit.config.stacks import load_engine_path
    doc = shipped_doc("spark-duo")
    change(doc["config"])
    spec = load_engine_path(doc["config"])
    assert sanity_problems(spec) == []
    return sanity_warnings(spec)


def test_both_twins_listed_say_nothing():
    assert spark_warnings(lambda c: None) == []


@pytest.mark.parametrize("listed, twin", [("rocep1s0f1", "roceP2p1s0f1"), ("roceP2p1s0f1:1", "rocep1s0f1")])
def test_one_twin_of_the_stack_fabric_names_the_other_and_the_key(listed, twin):
    def one(c):
        c[P + "fabric"]["hcas"] = [listed]
    said = spark_warnings(one)
    assert len(said) == 2   # each Spark
    name = listed.split(":")[0]
    assert said[0].startswith(f"fabric.hcas: spark-1a32 (gb10) lists {name} but not its PCIe twin {twin}")
    assert f"fix: add {twin} to fabric.hcas" in said[0] and "half" in said[0]


def test_a_node_that_lists_its_own_hcas_is_named_by_its_key():
    def own(c):
        c[P + "nodes"][1]["fabric"] = {"hcas": ["roceP2p1s0f0"]}
    [said] = spark_warnings(own)
    assert said.startswith("nodes[1].fabric.hcas: ") and "its PCIe twin rocep1s0f0" in said


def test_names_that_tell_no_twin_say_nothing():
    def other(c):
        c[P + "fabric"]["hcas"] = ["mlx5_0", "roceP5p1s0f1"]
    assert spark_warnings(other) == []
