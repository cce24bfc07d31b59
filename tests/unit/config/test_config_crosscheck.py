"""Cross-resource checks: what two parts of a stack would both claim on one node (ports, GPUs,
unit and container names, generated ones included), units that must never be retired, engines
with a topology they cannot run, `..` in paths, and secrets written in plain text. Each case is
one ConfigError naming the key path and the fix, on both paths."""

from __future__ import annotations

import copy

import pytest

from tests.unit.config.stacks import P, both_paths_error, lab_ray_doc, load_engine_path, shipped_doc


def cfg(stack: str) -> dict:
    """A shipped stack; the lab with its first deployment only, over Ray (these tests add their own)."""
    return lab_ray_doc() if stack == "lab" else shipped_doc(stack)


def second_deployment(doc: dict, **changes) -> dict:
    deployments = doc["config"][P + "deployments"]
    extra = {**copy.deepcopy(deployments[0]), **changes}
    deployments.append(extra)
    return extra


# --------------------------------------------------------------------------------------------
# Ports

def test_two_deployments_on_one_port_of_a_node(tmp_path):
    doc = cfg("rtxpro-quad")
    second_deployment(doc, name="other", tensor_parallel=4)
    both_paths_error(tmp_path, doc, P + "deployments[1].port", "port 30000 on node 'llm-server'",
                     "API port of deployment 'qwen35-397b'", "give each its own port")


def test_deployment_port_equal_to_the_ray_port(tmp_path):
    doc = cfg("spark-duo")
    doc["config"][P + "deployments"][0]["port"] = 6379
    both_paths_error(tmp_path, doc, P + "deployments[0].port", "Ray port", "ray.port")


def test_deployment_port_equal_to_the_ray_client_port(tmp_path):
    doc = cfg("spark-duo")
    doc["config"][P + "deployments"][0]["port"] = 10001
    both_paths_error(tmp_path, doc, P + "deployments[0].port", "Ray client server")


def test_deployment_port_22_is_refused(tmp_path):
    doc = cfg("rtxpro-quad")
    doc["config"][P + "deployments"][0]["port"] = 22
    both_paths_error(tmp_path, doc, P + "deployments[0].port", "system port", "sshd listens on 22", "1024")


def test_deployment_port_below_1024_is_refused(tmp_path):
    doc = cfg("rtxpro-quad")
    doc["config"][P + "deployments"][0]["port"] = 80
    both_paths_error(tmp_path, doc, P + "deployments[0].port", "system port")


def test_deployment_port_equal_to_the_nodes_ssh_port(tmp_path):
    doc = cfg("rtxpro-quad")
    doc["config"][P + "nodes"][0]["ssh"]["port"] = 2222
    doc["config"][P + "deployments"][0]["port"] = 2222
    both_paths_error(tmp_path, doc, P + "deployments[0].port", "SSH port of node 'llm-server'")


def test_ray_port_22_is_refused(tmp_path):
    doc = cfg("spark-duo")
    doc["config"][P + "ray"]["port"] = 22
    both_paths_error(tmp_path, doc, P + "ray.port", "system port")


def test_ray_port_unused_without_a_ray_deployment_is_not_checked(tmp_path):
    doc = cfg("rtxpro-quad")
    doc["config"][P + "ray"] = {"port": 22}
    load_engine_path(doc["config"])


def sglang_native(doc: dict) -> dict:
    d = doc["config"][P + "deployments"][0]
    d.update(engine="sglang", topology="native")
    if d.get("kv_cache_dtype") == "fp8":
        d["kv_cache_dtype"] = "fp8_e4m3"   # SGLang's spelling of it
    return d


def test_sglang_dist_port_equal_to_its_api_port(tmp_path):
    doc = cfg("spark-duo")
    sglang_native(doc)["dist_port"] = 8000
    both_paths_error(tmp_path, doc, P + "deployments[0].dist_port", "port 8000", "API port")


def test_sglang_dist_port_below_1024(tmp_path):
    doc = cfg("spark-duo")
    sglang_native(doc)["dist_port"] = 22
    both_paths_error(tmp_path, doc, P + "deployments[0].dist_port", "system port")


def test_sglang_native_api_port_is_claimed_on_every_rank(tmp_path):
    doc = cfg("spark-duo")
    sglang_native(doc)
    doc["config"][P + "nodes"][1]["ssh"]["port"] = 8000
    both_paths_error(tmp_path, doc, P + "deployments[0].port", "node 'spark-5be3'", "SSH port")


def test_bandwidth_check_port_equal_to_a_deployment_port(tmp_path):
    doc = shipped_doc("lab")  # its tiny: ranks on both nodes (a head executor's cluster is not measured)
    doc["config"][P + "fabric"]["bandwidth_check"]["port"] = 8000
    both_paths_error(tmp_path, doc, P + "deployments[0].port", "fabric bandwidth check")


def test_layer_registry_port_equal_to_a_deployment_port(tmp_path):
    doc = cfg("lab")  # vllm-lab is built on lab-1 and copied to lab-2: the registry is on lab-1
    doc["config"][P + "fabric"]["layer_registry"] = {"port": 8000}
    both_paths_error(tmp_path, doc, P + "fabric.layer_registry.port", "port 8000 on node 'lab-1'",
                     "API port of deployment 'tiny'", "deployments[0].port", "fix: give each its own port",
                     "port: 8001, free on 'lab-1'")


def test_layer_registry_port_equal_to_the_gateway_port(tmp_path):
    doc = cfg("spark-duo")
    doc["config"][P + "fabric"]["layer_registry"] = {"port": 4000}
    both_paths_error(tmp_path, doc, P + "fabric.layer_registry.port", "port 4000 on node 'spark-1a32'",
                     "the gateway's port (gateway.port)", "fix: give each its own port")


def test_layer_registry_port_is_free_where_no_registry_runs(tmp_path):
    """Only the build nodes of images copied to peers run a registry: on lab-2 the port is free."""
    doc = cfg("lab")
    doc["config"][P + "fabric"]["layer_registry"] = {"port": 8002}
    second_deployment(doc, name="small", nodes=["lab-2"], topology="single", executor="ray", port=8002)
    spec = load_engine_path(doc["config"])
    assert spec.layer_registry_nodes() == ["lab-1"]
    doc["config"][P + "images"][0]["nodes"] = ["lab-1"]
    doc["config"][P + "deployments"] = [dict(doc["config"][P + "deployments"][0], nodes=["lab-1"], topology="single",
                                             executor="ray", port=8000)]
    doc["config"][P + "fabric"]["layer_registry"] = {"port": 8000}
    assert load_engine_path(doc["config"]).layer_registry_nodes() == []


# --------------------------------------------------------------------------------------------
# GPUs

def test_gpus_claimed_twice_on_a_node(tmp_path):
    doc = cfg("rtxpro-quad")
    second_deployment(doc, name="other", port=30001, tensor_parallel=4)
    both_paths_error(tmp_path, doc, P + "deployments[1].nodes[0]", "GPUs of node 'llm-server'",
                     "already taken by deployment 'qwen35-397b'")


def test_a_ray_worker_node_of_a_head_executor_is_free_for_another_engine(tmp_path):
    """lab: the engine runs on lab-1 alone (executor head): lab-2's CPU is free."""
    doc = cfg("lab")
    second_deployment(doc, name="small", nodes=["lab-2"], topology="single", executor="ray", port=8001)
    assert [d.name for d in load_engine_path(doc["config"]).deployments] == ["tiny", "small"]


# --------------------------------------------------------------------------------------------
# Unit and container names

def test_deployment_named_like_a_generated_ray_worker_unit(tmp_path):
    doc = cfg("lab")
    second_deployment(doc, name="tiny-ray-worker", nodes=["lab-2"], topology="single", executor="ray")
    both_paths_error(tmp_path, doc, P + "deployments[1].name", "bws-tiny-ray-worker.service", "Ray worker unit",
                     "rename the deployment")


def test_deployment_named_like_a_generated_bandwidth_container(tmp_path):
    doc = shipped_doc("lab")  # its tiny: ranks on both nodes, measured (bws-tiny-bw-0 and -1)
    doc["config"][P + "deployments"][1].update(name="tiny-bw-1", nodes=["lab-2"], topology="single")
    doc["config"][P + "deployments"][1].pop("executor")
    both_paths_error(tmp_path, doc, P + "deployments[1].name", "container name bws-tiny-bw-1",
                     "fabric bandwidth check")


def test_deployment_named_like_the_layer_registry_container(tmp_path):
    doc = cfg("lab")
    doc["config"][P + "fabric"]["layer_registry"] = {}
    second_deployment(doc, name="layer-registry", nodes=["lab-1"], topology="single", executor="ray", port=8001)
    both_paths_error(tmp_path, doc, P + "deployments[1].name", "container name bws-layer-registry on node 'lab-1'",
                     "the layer registry's container (fabric.layer_registry)", "rename the deployment")


@pytest.mark.parametrize("unit", ["bws-tiny.service", "bws-tiny-ray-head.service"])
def test_our_own_units_are_not_retirable(tmp_path, unit):
    doc = cfg("lab")
    doc["config"][P + "retire"].append({"node": "lab-1", "unit": unit})
    both_paths_error(tmp_path, doc, P + "retire[1].unit", "this project's own")


def test_our_own_units_are_not_kept(tmp_path):
    doc = cfg("lab")
    doc["config"][P + "keep"].append({"node": "lab-1", "unit": "bws-tiny.service"})
    both_paths_error(tmp_path, doc, P + "keep[1].unit", "this project's own")


@pytest.mark.parametrize("unit", ["ssh", "ssh.service", "sshd", "sshd.service", "sshd@1.service", "docker",
                                  "docker.service", "docker.socket", "containerd", "containerd.service",
                                  "systemd-networkd.service", "systemd-journald"])
def test_system_units_are_not_retirable(tmp_path, unit):
    doc = cfg("lab")
    doc["config"][P + "retire"].append({"node": "lab-1", "unit": unit})
    both_paths_error(tmp_path, doc, P + "retire[1].unit", "cannot be retired", "remove it from retire")


def test_system_units_may_be_kept(tmp_path):
    doc = cfg("lab")
    doc["config"][P + "keep"].append({"node": "lab-1", "unit": "sshd.service"})
    load_engine_path(doc["config"])


def test_a_unit_retired_twice(tmp_path):
    doc = cfg("lab")
    doc["config"][P + "retire"].append({"node": "lab-1", "unit": "glm.service"})
    both_paths_error(tmp_path, doc, P + "retire[1]", "listed twice", "list it once")


# --------------------------------------------------------------------------------------------
# Engines and topologies

def test_vllm_native_with_ranks_that_do_not_divide_over_the_nodes_is_refused(tmp_path):
    doc = cfg("spark-duo")
    doc["config"][P + "deployments"][0].update(topology="native", tensor_parallel=3)
    both_paths_error(tmp_path, doc, P + "deployments[0].tensor_parallel", "vLLM's native launch",
                     "does not divide over 2 nodes")


def test_vllm_native_claims_its_master_port_on_the_head_and_the_api_port_there_only(tmp_path):
    doc = cfg("spark-duo")
    doc["config"][P + "deployments"][0].update(topology="native", dist_port=8000)
    both_paths_error(tmp_path, doc, P + "deployments[0].dist_port", "port 8000", "API port")
    doc = cfg("spark-duo")
    doc["config"][P + "deployments"][0]["topology"] = "native"
    # The other ranks run --headless: the API port is free there (here: the worker's SSH port).
    doc["config"][P + "nodes"][1]["ssh"]["port"] = 8000
    load_engine_path(doc["config"])


# --------------------------------------------------------------------------------------------
# `..` in any path

@pytest.mark.parametrize("where,value,key", [
    (["models", 0, "cache_dir"], "/var/lib/../../etc", "models[0].cache_dir"),
    (["state_dir"], "/var/lib/blackwell-serving/..", "state_dir"),
    (["models", 0, "source"], {"kind": "local", "path": "../models/x"}, "models[0].source.path"),
    (["models", 0, "source"], {"kind": "node", "path": "/srv/../root"}, "models[0].source.path"),
    (["nodes", 0, "ssh", "private_key_path"], "~/.ssh/../../etc/key", "nodes[0].ssh.private_key_path"),
    (["fabric", "peer_key"], "/root/../etc/shadow", "fabric.peer_key"),
    (["deployments", 0, "api_key"], {"file": "../secrets/key"}, "deployments[0].api_key.file"),
    (["images", 0, "pip_ca_bundle"], "/etc/ssl/../shadow", "images[0].pip_ca_bundle"),
    (["deployments", 0, "docker"], {"mounts": ["/srv/../etc:/x"]}, "deployments[0].docker.mounts[0]"),
], ids=lambda v: v if isinstance(v, str) and "/" not in v else None)
def test_dot_dot_in_a_path_is_refused(tmp_path, where, value, key):
    doc = cfg("spark-duo")
    here = doc["config"]
    first, *rest = where
    if not rest:
        here[P + first] = value
    else:
        here = here[P + first]
        for p in rest[:-1]:
            here = here[p]
        here[rest[-1]] = value
    both_paths_error(tmp_path, doc, P + key, "'..' is not allowed")


# --------------------------------------------------------------------------------------------
# Secrets in plain text

def api_key_from_config(doc: dict, value) -> None:
    doc["config"][P + "deployments"][0]["api_key"] = {"config": "qwenApiKey"}
    if value is not None:
        doc["config"][P + "qwenApiKey"] = value


def test_config_reference_to_a_plain_value_is_refused(tmp_path):
    doc = cfg("spark-duo")
    api_key_from_config(doc, "sk-plaintext")
    both_paths_error(tmp_path, doc, P + "deployments[0].api_key.config", "plain text",
                     "pulumi config set --secret blackwell-serving:qwenApiKey")


def test_config_reference_to_a_missing_key_is_refused(tmp_path):
    doc = cfg("spark-duo")
    api_key_from_config(doc, None)
    both_paths_error(tmp_path, doc, P + "deployments[0].api_key.config", "is not set",
                     "pulumi config set --secret blackwell-serving:qwenApiKey")


def test_config_reference_to_a_schema_key_is_refused(tmp_path):
    doc = cfg("spark-duo")
    doc["config"][P + "deployments"][0]["api_key"] = {"config": "state_dir"}
    both_paths_error(tmp_path, doc, P + "deployments[0].api_key.config", "key of the stack config itself")


def test_config_reference_to_a_secure_value_is_accepted():
    doc = cfg("spark-duo")
    api_key_from_config(doc, {"secure": "v1:abcd"})
    assert load_engine_path(doc["config"]).deployments[0].api_key.config == "qwenApiKey"


def test_encrypted_value_inside_a_schema_key_is_refused(tmp_path):
    doc = cfg("spark-duo")
    doc["config"][P + "deployments"][0]["served_name"] = {"secure": "v1:abcd"}
    both_paths_error(tmp_path, doc, P + "deployments", "encrypted", "{config: NAME}")


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "VLLM_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                                  "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD"])
def test_secret_named_env_is_refused(tmp_path, name):
    doc = cfg("spark-duo")
    doc["config"][P + "deployments"][0]["env"][name] = "value"
    both_paths_error(tmp_path, doc, P + f"deployments[0].env.{name}", "plain text", "api_key: {config: KEY}")


def test_hf_token_value_in_env_is_refused(tmp_path):
    doc = cfg("spark-duo")
    doc["config"][P + "deployments"][0]["env"]["EXTRA"] = "hf_" + "a1B2" * 9
    both_paths_error(tmp_path, doc, P + "deployments[0].env.EXTRA", "hf_token: {config: KEY}")


@pytest.mark.parametrize("name", ["TOKENIZERS_PARALLELISM", "VLLM_MAX_TOKENS_PER_BATCH", "VLLM_ATTENTION_BACKEND"])
def test_env_names_that_only_look_like_secrets_are_accepted(name):
    doc = cfg("spark-duo")
    doc["config"][P + "deployments"][0]["env"][name] = "1"
    load_engine_path(doc["config"])


@pytest.mark.parametrize("args,index", [(["--api-key", "abc123"], 0), (["--enforce-eager", "--api-key=abc123"], 1),
                                        (["--hf-token", "x"], 0), (["--x", "hf_" + "Z9" * 20], 1)],
                         ids=["api-key-space", "api-key-equals", "hf-token-flag", "hf-token-value"])
def test_secret_in_extra_args_is_refused(tmp_path, args, index):
    doc = cfg("spark-duo")
    doc["config"][P + "deployments"][0]["extra_args"] = args
    both_paths_error(tmp_path, doc, P + f"deployments[0].extra_args[{index}]", "command line", "{config: KEY}")


def test_extra_args_about_tokens_are_accepted():
    doc = cfg("spark-duo")
    doc["config"][P + "deployments"][0]["extra_args"] = ["--max-num-batched-tokens", "8192", "--tokenizer-mode=auto"]
    load_engine_path(doc["config"])
