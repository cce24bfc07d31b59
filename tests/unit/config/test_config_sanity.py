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
