"""The gateway (components/resources/gateway.py, components/config/gateway.py): the LiteLLM config routes
every deployment and every upstream; the keys reach it only on the step's stdin (never the unit,
argv or the config); its step is its own, so a change of routes re-runs the gateway's steps
alone; and the config's rules name the key and the fix."""

from __future__ import annotations

import copy

import pytest
import yaml

from components.config.gateway import LITELLM_VERSION
from components.resources.gateway import (
    CONFIG_FILE,
    ENV_FILE,
    KEY_CHECK_FILE,
    KEY_CHECK_TEXT,
    MASTER_KEY_VAR,
    gateway_argv,
    key_var,
    litellm_config,
    routes,
)
from components.resources.api import DeploymentApi
from tests.unit.config.stacks import P, both_paths_error, lab_one_engine_doc, load_engine_path, shipped_doc
from tests.unit.mocked import SENTINEL, script_of, snapshot, stdin_data
from tests.unit.test_graph import closure, dep_names, snap


def routed(spec) -> list:
    """The gateway's routes of a stack config, each deployment's API as it publishes it (with a key
    where the config gives one)."""
    apis = [DeploymentApi.of(d, spec.node(d.nodes[0]), "key" if d.api_key is not None else None)
            for d in spec.deployments]
    return routes(spec.gateway, apis)


def lab_with_upstream(**upstream) -> dict:
    doc = shipped_doc("lab")
    doc["config"][P + "gateway"]["upstreams"] = [{
        "name": "embeddings", "url": "http://198.19.0.12:8001/v1", "models": ["bge-small", "bge-large"],
        "mode": "embedding", "api_key": {"env": "BWS_TEST_UPSTREAM_KEY"}, **upstream}]
    return doc


# --------------------------------------------------------------------------------------------
# The rendered LiteLLM config


def test_config_routes_every_deployment_to_its_head_with_its_own_key():
    spec = snap("lab").spec
    config = yaml.safe_load(litellm_config(spec.gateway, routed(spec)))
    by_name = {m["model_name"]: m for m in config["model_list"]}
    assert list(by_name) == [d.served_name for d in spec.deployments] == ["tiny-llama", "tiny-llama-b",
                                                                              "tiny-llama-gguf"]
    # tiny's and tiny-gguf's head is the gateway's node: loopback; tiny-b's head is lab-2: its fabric address.
    assert by_name["tiny-llama"]["litellm_params"] == {
        "model": "openai/tiny-llama", "api_base": "http://127.0.0.1:8000/v1",
        "api_key": "os.environ/BWS_DEPLOYMENT_KEY_TINY", "timeout": 600, "stream_timeout": 600}
    assert by_name["tiny-llama-b"]["litellm_params"]["api_base"] == "http://198.19.0.12:8002/v1"
    assert by_name["tiny-llama-b"]["litellm_params"]["api_key"] == "os.environ/BWS_DEPLOYMENT_KEY_TINY_B"
    assert by_name["tiny-llama-gguf"]["litellm_params"]["api_base"] == "http://127.0.0.1:8003/v1"
    assert config["general_settings"] == {"master_key": f"os.environ/{MASTER_KEY_VAR}",
                                          "custom_auth": "bws_key_check.check_key",
                                          "custom_auth_run_common_checks": True}


def test_config_routes_every_upstream_model_and_a_keyless_deployment(monkeypatch):
    doc = lab_with_upstream()
    del doc["config"][P + "deployments"][1]["api_key"]
    spec = load_engine_path(doc["config"])
    config = yaml.safe_load(litellm_config(spec.gateway, routed(spec)))
    assert [m["model_name"] for m in config["model_list"]] == ["tiny-llama", "tiny-llama-b", "tiny-llama-gguf",
                                                               "bge-small", "bge-large"]
    up = config["model_list"][3]
    assert up["litellm_params"]["api_base"] == "http://198.19.0.12:8001/v1"
    assert up["litellm_params"]["api_key"] == "os.environ/BWS_UPSTREAM_KEY_EMBEDDINGS"
    assert up["model_info"] == {"mode": "embedding"}
    # A deployment without a key: a placeholder (the OpenAI client wants one), not a secret.
    assert config["model_list"][1]["litellm_params"]["api_key"] == "none"
    assert [(r.model, r.mode) for r in routed(spec)][3:] == [("bge-small", "embedding"), ("bge-large", "embedding")]


def test_a_deployment_bound_to_an_address_is_reached_there():
    doc = shipped_doc("lab")
    doc["config"][P + "deployments"][1]["bind"] = "198.19.0.12"  # the fabric only
    doc["config"][P + "deployments"][0]["bind"] = "127.0.0.1"    # loopback, on the gateway's node
    spec = load_engine_path(doc["config"])
    assert [r.api_base for r in routed(spec)] == ["http://127.0.0.1:8000/v1", "http://198.19.0.12:8002/v1",
                                                  "http://127.0.0.1:8003/v1"]


# --------------------------------------------------------------------------------------------
# The steps: keys, unit, dependencies


def test_keys_travel_on_stdin_only(monkeypatch):
    s = snap("lab")
    install = s.by_name("gateway-install")
    # The keys are the stdin of the gateway's env step alone: the install step's stays plain.
    data = stdin_data(s.by_name("gateway-env"))
    assert data == f"BWS_DEPLOYMENT_KEY_TINY={SENTINEL}\nBWS_DEPLOYMENT_KEY_TINY_B={SENTINEL}\n" \
                   f"BWS_DEPLOYMENT_KEY_TINY_GGUF={SENTINEL}\n{MASTER_KEY_VAR}={SENTINEL}\n"
    assert stdin_data(install) == "" and "4dabf18193072939515e22adb298388d" not in str(install.inputs["stdin"])
    assert 'env_path=/etc/blackwell-serving/gateway.env' in script_of(s.by_name("gateway-env"))
    script = script_of(install)
    assert SENTINEL not in script and SENTINEL not in str(install.inputs["create"])
    assert SENTINEL not in " ".join(gateway_argv(s.spec.gateway))
    # The unit mounts the config and the env file read-only; no -e NAME=value, no key.
    unit = script.split("<<'BWS_UNIT_EOF'\n", 1)[1]
    # files bound with --mount: a missing one stops the start instead of becoming a directory
    assert f'"type=bind,source={CONFIG_FILE},target=/etc/litellm/config.yaml,readonly"' in unit
    assert f'"type=bind,source={ENV_FILE},target=/run/secrets/blackwell-serving.env,readonly"' in unit
    # The key check beside the config, where LiteLLM looks for the custom_auth module.
    assert f'"type=bind,source={KEY_CHECK_FILE},target=/etc/litellm/bws_key_check.py,readonly"' in unit
    assert "KEY=" not in unit and SENTINEL not in unit
    # The env file and the config are written root-only.
    assert "umask 077" in script and 'chmod 0600 "$config_path.tmp"' in script
    assert 'chmod 0600 "$env_path.tmp"' in script_of(s.by_name("gateway-env"))
    assert 'chmod 0600 "$key_check_path.tmp"' in script and KEY_CHECK_TEXT in script
    for r in s.steps():
        assert SENTINEL not in (script_of(r) or ""), r.name


def test_an_upstream_key_joins_the_env_file(monkeypatch):
    monkeypatch.setenv("BWS_TEST_UPSTREAM_KEY", "x")
    spec = load_engine_path(lab_with_upstream()["config"])
    s = snapshot("lab", spec)
    assert f"BWS_UPSTREAM_KEY_EMBEDDINGS={SENTINEL}\n" in stdin_data(s.by_name("gateway-env"))
    health = script_of(s.by_name("gateway-health"))
    assert '"/v1/embeddings"' not in health and "/v1/embeddings" in health and '"input": "Say hello."' in health


def test_gateway_waits_for_its_image_and_the_checks_and_its_gate_for_every_engine():
    s = snap("lab")
    deps = dep_names(s.by_name("gateway-install"))
    assert "gateway-lab-build" in deps
    assert {"tiny-preflight-engine", "tiny-b-preflight-engine", "lab-1-glm-retire"} <= deps
    assert {"tiny-health", "tiny-b-health", "gateway-install"} <= dep_names(s.by_name("gateway-health"))
    # The engines never wait for the gateway: changing it cannot restart them.
    for unit in s.units:
        assert not any(n.startswith("gateway") for n in closure(s, f"{unit._name}-install")), unit.unit_name


def test_a_change_of_routes_changes_the_gateways_steps_alone():
    before = snap("lab")
    doc = shipped_doc("lab")
    doc["config"][P + "gateway"]["request_timeout_s"] = 900
    after = snapshot("lab", load_engine_path(doc["config"]))
    changed = sorted(r.name for r in after.steps()
                     if str(r.inputs.get("create")) != str(before.by_name(r.name).inputs.get("create"))
                     or str(r.inputs.get("stdin")) != str(before.by_name(r.name).inputs.get("stdin")))
    assert changed == ["gateway-health", "gateway-install"]


def test_no_gateway_no_gateway_steps():
    s = snapshot("lab", load_engine_path(lab_one_engine_doc()["config"]))
    assert s.serving.gateway is None
    assert not [r for r in s.steps() if r.name.startswith("gateway-install")]


# --------------------------------------------------------------------------------------------
# Config rules: key and fix


def gw(doc: dict) -> dict:
    return doc["config"][P + "gateway"]


@pytest.mark.parametrize("change, key, words", [
    (lambda d: gw(d).update(node="lab-9"), "gateway.node", ["unknown node 'lab-9'", "fix:"]),
    (lambda d: gw(d).update(image="nope"), "gateway.image", ["unknown image 'nope'", "fix:"]),
    (lambda d: gw(d).update(image="vllm-lab"), "gateway.image", ["does not install LiteLLM",
                                                                 f"litellm[proxy]=={LITELLM_VERSION}"]),
    (lambda d: d["config"][P + "images"][1].update(pip=["litellm[proxy]>=1.80"]), "images[1].pip",
     ["does not pin LiteLLM exactly", "fix:"]),
    (lambda d: d["config"][P + "images"][1].update(pip=[f"litellm[proxy]=={LITELLM_VERSION}"]), "images[1].pip",
     ["HTTP 500", "prisma==0.15.0", "fix:"]),
    (lambda d: d["config"][P + "images"][1].update(nodes=["lab-2"], build_node="lab-2"), "gateway.image",
     ["not placed on 'lab-1'", "images[1].nodes"]),
    (lambda d: gw(d).update(port=8000), "gateway.port", ["API port of deployment 'tiny'", "fix:"]),
    (lambda d: gw(d).update(port=22), "gateway.port", ["system port", "fix:"]),
    (lambda d: d["config"][P + "deployments"][1].update(served_name="tiny-llama"), "deployments[1].served_name",
     ["also served by deployment 'tiny'", "fix:"]),
    (lambda d: d["config"][P + "deployments"][1].update(bind="127.0.0.1"), "deployments[1].bind",
     ["only on its head 'lab-2'", "fix:"]),
    (lambda d: gw(d).pop("api_key"), "gateway.api_key", []),
])
def test_gateway_config_errors_name_the_key_and_the_fix(tmp_path, change, key, words):
    doc = shipped_doc("lab")
    change(doc)
    both_paths_error(tmp_path, doc, P + key, *words)


def test_a_deployment_named_gateway_clashes_with_the_gateways_unit(tmp_path):
    doc = shipped_doc("lab")
    doc["config"][P + "deployments"][1]["name"] = "gateway"
    doc["config"][P + "deployments"][1].update(nodes=["lab-2"], topology="single")
    doc["config"][P + "deployments"][1].pop("executor")
    gw(doc)["node"] = "lab-2"
    doc["config"][P + "images"][1]["nodes"] = ["lab-2"]
    doc["config"][P + "images"][1]["build_node"] = "lab-2"
    both_paths_error(tmp_path, doc, P + "deployments[1].name", "bws-gateway", "the gateway's")


def test_upstream_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("BWS_TEST_UPSTREAM_KEY", "x")
    doc = lab_with_upstream(models=["tiny-llama-b"])
    both_paths_error(tmp_path, doc, P + "gateway.upstreams[0].models[0]", "also served by deployment 'tiny-b'")
    doc = lab_with_upstream()
    gw(doc)["upstreams"].append(copy.deepcopy(gw(doc)["upstreams"][0]) | {"models": ["other"]})
    both_paths_error(tmp_path, doc, P + "gateway.upstreams[1].name", "used twice", "fix:")
    doc = lab_with_upstream(url="http://host:8001/v1; rm -rf /")
    both_paths_error(tmp_path, doc, P + "gateway.upstreams[0].url")


def test_key_var_names_cannot_collide_between_a_deployment_and_an_upstream():
    assert key_var("deployment", "emb") != key_var("upstream", "emb")
    assert key_var("deployment", "tiny-b") == "BWS_DEPLOYMENT_KEY_TINY_B"


# --------------------------------------------------------------------------------------------
# The key check (templates/gateway/bws_key_check.py, LiteLLM's custom_auth): its logic, with the
# three LiteLLM names it imports stood in for (LiteLLM itself runs only in the gateway's image;
# tests/lab/test_lab_gateway.py checks it there with a real OpenAI client).


class _ProxyException(Exception):
    def __init__(self, message, type, param, code=None):
        super().__init__(message)
        self.message, self.type, self.param, self.code = message, type, param, str(code)


@pytest.fixture
def key_check(monkeypatch):
    import sys
    import types

    stubs = {"litellm": types.ModuleType("litellm"), "litellm.constants": types.ModuleType("litellm.constants"),
             "litellm.proxy": types.ModuleType("litellm.proxy"),
             "litellm.proxy._types": types.ModuleType("litellm.proxy._types")}
    stubs["litellm.constants"].LITELLM_PROXY_MASTER_KEY_ALIAS = "alias"
    stubs["litellm.proxy._types"].ProxyException = _ProxyException
    stubs["litellm.proxy._types"].LitellmUserRoles = types.SimpleNamespace(PROXY_ADMIN="proxy_admin")
    stubs["litellm.proxy._types"].UserAPIKeyAuth = dict
    for name, module in stubs.items():
        monkeypatch.setitem(sys.modules, name, module)
    module = types.ModuleType("bws_key_check")
    exec(compile(KEY_CHECK_TEXT, "bws_key_check.py", "exec"), module.__dict__)
    return module


@pytest.mark.parametrize("api_key, master_key, words", [
    (None, "the-key", "didn't provide an API key"),
    ("", "the-key", "didn't provide an API key"),
    ("wrong", "the-key", "Incorrect API key"),
    ("the-key-and-more", "the-key", "Incorrect API key"),
    ("the-kéy", "the-key", "Incorrect API key"),   # not ASCII: still a plain refusal
    ("the-key", None, "no key configured"),
    ("", "", "no key configured"),
])
def test_the_key_check_refuses_with_401_in_openais_shape(key_check, api_key, master_key, words):
    with pytest.raises(_ProxyException) as err:
        key_check.accepted(api_key, master_key)
    assert err.value.code == "401" and err.value.type == "invalid_request_error" and err.value.param is None
    assert words in err.value.message
    assert master_key is None or master_key == "" or master_key not in err.value.message


def test_the_key_check_accepts_the_key_and_hands_on_no_key(key_check, monkeypatch):
    import asyncio
    import sys

    monkeypatch.setattr(sys.modules["litellm.proxy"], "proxy_server",
                        type("proxy_server", (), {"master_key": "the-key", "litellm_proxy_admin_name": "admin"}),
                        raising=False)
    monkeypatch.setitem(sys.modules, "litellm.proxy.proxy_server", sys.modules["litellm.proxy"].proxy_server)
    who = asyncio.run(key_check.check_key(None, "the-key"))
    assert who == {"api_key": "alias", "user_role": "proxy_admin", "user_id": "admin"}
    with pytest.raises(_ProxyException):
        asyncio.run(key_check.check_key(None, "the-key "))


def test_the_key_check_fits_its_heredoc():
    assert "BWS_GATEWAY_KEY_CHECK_EOF" not in KEY_CHECK_TEXT and KEY_CHECK_TEXT.endswith("\n")
