"""Checks across the deployments of one stack, per node: their ports (API, SGLang dist-init,
the Ray cluster's, SSH and system ports), the GPUs their engines take, and, at preview, the
memory they need together. A stack of several deployments on separate nodes passes; each clash
is one line naming the key, the node, the other deployment and the fix."""

from __future__ import annotations

import copy
import json
import re

import pytest

from components.config import load_stack_file
from components.sizing.stack_fit import PreflightError, check_stack_fit, shared_node_problems, stack_fit
from tests.unit.config.stacks import (P, both_paths_error, file_error, lab_ray_doc, load_engine_path,
                                      shipped_doc, write_doc)


def lab_with_three_nodes() -> dict:
    """The lab stack (its first deployment) with a third node, lab-3, that has the image and the model."""
    doc = lab_ray_doc()
    c = doc["config"]
    third = copy.deepcopy(c[P + "nodes"][1])
    third.update(name="lab-3", host="198.18.0.13", fabric_address="198.19.0.13")
    c[P + "nodes"].append(third)
    c[P + "images"][0]["nodes"].append("lab-3")
    c[P + "models"][0]["nodes"].append("lab-3")
    return doc


def add_deployment(doc: dict, **changes) -> dict:
    deployments = doc["config"][P + "deployments"]
    extra = {**copy.deepcopy(deployments[0]), **changes}
    if extra.get("topology") != "ray":
        extra.pop("executor", None)
    deployments.append(extra)
    return extra


def three_deployments() -> dict:
    """tiny: a Ray cluster on lab-1 (head, engine) and lab-2 (worker); small: lab-2's CPU;
    other: lab-3's, on the same API port as tiny (another node)."""
    doc = lab_with_three_nodes()
    add_deployment(doc, name="small", nodes=["lab-2"], topology="single", port=8001, served_name="small")
    add_deployment(doc, name="other", nodes=["lab-3"], topology="single", port=8000, served_name="other")
    return doc


# --------------------------------------------------------------------------------------------
# A stack of several deployments that passes

def test_three_deployments_on_separate_engine_nodes_pass(tmp_path):
    doc = three_deployments()
    spec = load_engine_path(doc["config"])
    assert [(d.name, d.engine_nodes, d.port) for d in spec.deployments] == [
        ("tiny", ["lab-1"], 8000), ("small", ["lab-2"], 8001), ("other", ["lab-3"], 8000)]
    assert [d.name for d in load_stack_file(write_doc(tmp_path, doc)).deployments] == ["tiny", "small", "other"]


def test_a_second_ray_cluster_on_nodes_of_its_own_passes():
    doc = lab_with_three_nodes()
    doc["config"][P + "nodes"].append({**copy.deepcopy(doc["config"][P + "nodes"][2]), "name": "lab-4",
                                       "host": "198.18.0.14", "fabric_address": "198.19.0.14"})
    for key in ("images", "models"):
        doc["config"][P + key][0]["nodes"].append("lab-4")
    add_deployment(doc, name="second", nodes=["lab-3", "lab-4"], port=8000, served_name="second")
    assert [d.topology for d in load_engine_path(doc["config"]).deployments] == ["ray", "ray"]


# --------------------------------------------------------------------------------------------
# Ports, per node

def test_api_port_on_a_ray_worker_node_equal_to_the_ray_port(tmp_path):
    doc = three_deployments()
    doc["config"][P + "deployments"][1]["port"] = 6379
    both_paths_error(tmp_path, doc, P + "deployments[1].port", "port 6379 on node 'lab-2'",
                     "Ray port of deployment 'tiny's cluster", "(ray.port)", "give each its own port",
                     "e.g. port: 6380")


def test_api_port_on_a_ray_worker_node_equal_to_the_ray_agent_port(tmp_path):
    doc = three_deployments()
    doc["config"][P + "deployments"][1]["port"] = 52365
    both_paths_error(tmp_path, doc, P + "deployments[1].port", "port 52365 on node 'lab-2'",
                     "Ray agent's port of deployment 'tiny's cluster", "deployments[0].topology",
                     "e.g. port: 52366")


def test_two_ray_clusters_sharing_a_worker_node(tmp_path):
    doc = three_deployments()
    doc["config"][P + "deployments"][2].update(topology="ray", executor="head", nodes=["lab-3", "lab-2"])
    both_paths_error(tmp_path, doc, P + "deployments[2].nodes[1]", "node 'lab-2'",
                     "Ray cluster of deployment 'tiny' (deployments[0].nodes[1])", "52365",
                     "give each 'ray' deployment its own nodes")


def test_sglang_native_ports_on_every_rank_and_its_dist_port_on_the_head(tmp_path):
    doc = three_deployments()
    doc["config"][P + "deployments"][2].update(engine="sglang", topology="native", nodes=["lab-3", "lab-2"],
                                               tensor_parallel=2, port=8001, dist_port=8001)
    both_paths_error(tmp_path, doc, P + "deployments[2].port", "port 8001 on node 'lab-2'",
                     "API port of deployment 'small' (deployments[1].port)")
    both_paths_error(tmp_path, doc, P + "deployments[2].dist_port", "port 8001 on node 'lab-3'",
                     "API port of deployment 'other'", "e.g. dist_port: 8002")


def test_sglang_dist_port_on_its_head_equal_to_another_deployments_api_port(tmp_path):
    doc = three_deployments()
    doc["config"][P + "deployments"][1]["port"] = 20000
    doc["config"][P + "deployments"][2].update(engine="sglang", topology="native", nodes=["lab-2", "lab-3"],
                                               tensor_parallel=2, port=8002)
    both_paths_error(tmp_path, doc, P + "deployments[2].dist_port", "port 20000 on node 'lab-2'",
                     "API port of deployment 'small' (deployments[1].port)", "e.g. dist_port: 20001")


def test_two_deployments_api_ports_on_one_node(tmp_path):
    doc = three_deployments()
    doc["config"][P + "deployments"][2].update(nodes=["lab-2"], port=8001)
    both_paths_error(tmp_path, doc, P + "deployments[2].port", "port 8001 on node 'lab-2'",
                     "API port of deployment 'small' (deployments[1].port)", "e.g. port: 8002")


def test_two_clashes_on_one_node_are_given_different_free_ports(tmp_path):
    doc = three_deployments()
    doc["config"][P + "deployments"][1]["port"] = 6379
    doc["config"][P + "deployments"][2].update(nodes=["lab-2"], port=6379)
    text = file_error(tmp_path, doc, P + "deployments[2].port", "port 6379 on node 'lab-2'")
    assert re.findall(r"(deployments\[\d\]\.port): .*e\.g\. port: (\d+), free on 'lab-2'", text) == [
        ("deployments[1].port", "6380"), ("deployments[2].port", "6381")], text


def test_port_22_of_a_second_deployment(tmp_path):
    doc = three_deployments()
    doc["config"][P + "deployments"][2]["port"] = 22
    both_paths_error(tmp_path, doc, P + "deployments[2].port", "system port", "sshd listens on 22")


def test_api_port_equal_to_the_nodes_ssh_port(tmp_path):
    doc = three_deployments()
    doc["config"][P + "nodes"][2]["ssh"]["port"] = 2222
    doc["config"][P + "deployments"][2]["port"] = 2222
    both_paths_error(tmp_path, doc, P + "deployments[2].port", "SSH port of node 'lab-3'", "(nodes[2].ssh.port)",
                     "e.g. port: 2223")


# --------------------------------------------------------------------------------------------
# GPUs

def test_two_engines_on_one_nodes_gpus(tmp_path):
    doc = three_deployments()
    doc["config"][P + "deployments"][2].update(nodes=["lab-2"], port=8002)
    # A cpu node (the lab's) is shared by the engines on it ...
    load_engine_path(doc["config"])
    # ... a node with a GPU is not.
    doc["config"][P + "nodes"][1]["gpu"]["kind"] = "gb10"
    both_paths_error(tmp_path, doc, P + "deployments[2].nodes[0]", "GPUs of node 'lab-2'",
                     "already taken by deployment 'small' (deployments[1]: 1 GPU)",
                     "tensor_parallel 1 × pipeline_parallel 1 on one node", "need 2 of its 1 (gpu.count)",
                     "give each deployment its own nodes")


def test_gpus_of_a_four_gpu_box_claimed_twice(tmp_path):
    doc = shipped_doc("rtxpro-quad")
    add_deployment(doc, name="other", port=30001, served_name="other")
    both_paths_error(tmp_path, doc, P + "deployments[1].nodes[0]", "GPUs of node 'llm-server'",
                     "deployment 'qwen35-397b' (deployments[0]: 4 GPUs)", "need 8 of its 4")


def test_a_ray_engine_over_both_nodes_and_a_single_engine_on_one(tmp_path):
    doc = three_deployments()
    doc["config"][P + "deployments"][0].pop("executor")
    doc["config"][P + "deployments"][0]["tensor_parallel"] = 2
    for node in doc["config"][P + "nodes"]:  # GPUs (a cpu node's cores are shared)
        node["gpu"]["kind"] = "gb10"
    both_paths_error(tmp_path, doc, P + "deployments[1].nodes[0]", "GPUs of node 'lab-2'",
                     "deployment 'tiny' (deployments[0]: 1 GPU)", "need 2 of its 1")


# --------------------------------------------------------------------------------------------
# Memory, summed over the deployments that share a node (at preview: the models' sizes are read)

def tiny_model(tmp_path):
    model = tmp_path / "m"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 1, "hidden_size": 128, "torch_dtype": "bfloat16"}))
    (model / "model.safetensors").write_bytes(b"\0" * 4096)
    return model


def shared_lab(tmp_path, object_store_gb: float):
    """tiny's Ray worker and small's engine share lab-2 (8 GB, unified: a CPU node)."""
    doc = three_deployments()
    doc["config"][P + "models"][0]["source"] = {"kind": "local", "path": str(tiny_model(tmp_path))}
    doc["config"][P + "ray"]["object_store_gb"] = object_store_gb
    return load_engine_path(doc["config"])


def test_deployments_sharing_a_node_that_fit_it_together(tmp_path):
    lines: list[str] = []
    fits = check_stack_fit(shared_lab(tmp_path, 0.5), offline=True, log=lines.append)
    assert all(f.report.fits for f in fits)
    shared = [line for line in lines if line.startswith("node lab-2, shared by 2 deployments")]
    assert shared and shared[0].endswith("of 8.0 GB: fits"), lines


def test_a_ray_object_store_and_an_engine_overfill_the_node_they_share(tmp_path):
    spec = shared_lab(tmp_path, 3.0)
    with pytest.raises(PreflightError) as err:
        check_stack_fit(spec, offline=True, log=lambda _: None)
    text = str(err.value)
    assert "deployments[1].nodes[0]: node 'lab-2' cannot hold every deployment that shares it" in text
    assert "deployment 'tiny' (deployments[0]) 3.0 GB (its Ray object store, ray.object_store_gb)" in text
    assert "deployment 'small' (deployments[1])" in text and "of its 8.0 GB (gpu.memory_gb 8 × gpu.count 1)" in text
    assert "fix: move deployment 'small' to other nodes" in text and "Nothing was changed on any node" in text
    # each fits alone: only the sum stops the plan
    assert all(f.report.fits for f in stack_fit(spec, offline=True))


def test_two_engines_on_one_node_add_up_their_weights_and_kv(tmp_path):
    """The GPU check refuses this layout already; the memory sum holds on its own too."""
    spec = shared_lab(tmp_path, 0.5)
    small = spec.deployments[1].model_copy(update={"nodes": ["lab-1"]})
    both = spec.model_copy(update={"deployments": [spec.deployments[0], small]})
    problems = shared_node_problems(both, stack_fit(both, offline=True))
    assert len(problems) == 1 and problems[0].startswith("deployments[1].nodes[0]: node 'lab-1'"), problems
    assert problems[0].count("weights + KV + overhead on 1 GPU") == 2


def test_an_rtx_box_ray_object_store_is_host_memory_not_gpu_memory(tmp_path):
    spec = shared_lab(tmp_path, 3.0)
    rtx = [n.model_copy(update={"gpu": n.gpu.model_copy(update={"kind": "rtx-pro-6000"})}) for n in spec.nodes]
    spec = spec.model_copy(update={"nodes": rtx})
    assert shared_node_problems(spec, stack_fit(spec, offline=True)) == []
