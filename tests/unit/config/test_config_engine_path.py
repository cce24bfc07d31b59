"""One validation on both paths: the config the engine passes to the program (PULUMI_CONFIG) is
checked exactly as the stack file is — every key of the namespace, not only the known ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from components.config import load_stack_file
from tests.unit.config.stacks import (P, REPO, SHIPPED, both_paths_error, engine_encoding, load_engine_path,
                                      shipped_doc)


@pytest.mark.parametrize("stack", SHIPPED)
def test_shipped_stacks_are_the_same_spec_on_both_paths(stack):
    from_file = load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")
    from_engine = load_engine_path(shipped_doc(stack)["config"], stack)
    assert from_engine == from_file


def test_misspelled_top_level_key_is_refused_on_the_engine_path(tmp_path):
    doc = shipped_doc("spark-duo")
    doc["config"][P + "deploymnets"] = doc["config"].pop(P + "deployments")
    both_paths_error(tmp_path, doc, P + "deploymnets", "unknown key", "did you mean 'deployments'")


def test_namespace_with_underscore_names_the_right_one(tmp_path):
    doc = shipped_doc("spark-duo")
    doc["config"]["blackwell_serving:deployments"] = doc["config"].pop(P + "deployments")
    both_paths_error(tmp_path, doc, "blackwell_serving:deployments", "unknown namespace",
                     "write blackwell-serving:deployments")


def test_misspelled_namespace_names_the_right_one(tmp_path):
    doc = shipped_doc("spark-duo")
    doc["config"]["blackwell-servng:nodes"] = doc["config"][P + "nodes"]
    both_paths_error(tmp_path, doc, "blackwell-servng:nodes", "unknown namespace", "write blackwell-serving:nodes")


def test_unrelated_namespace_is_refused(tmp_path):
    doc = shipped_doc("lab")
    doc["config"]["aws:region"] = "eu-west-1"
    both_paths_error(tmp_path, doc, "aws:region", "reads no config of namespace 'aws'")


def test_key_without_namespace_is_refused(tmp_path):
    doc = shipped_doc("lab")
    doc["config"]["deployments"] = []
    both_paths_error(tmp_path, doc, "deployments", "needs its namespace", "blackwell-serving:deployments")


def test_pulumi_namespace_is_allowed(tmp_path):
    doc = shipped_doc("lab")
    doc["config"]["pulumi:tags"] = {"team": "serving"}
    load_engine_path(doc["config"])


def test_state_dir_is_plain_text_on_the_engine_path():
    """The engine passes strings unquoted: '/srv/x' is not JSON (it used to end in a traceback)."""
    doc = shipped_doc("lab")
    doc["config"][P + "state_dir"] = "/srv/x"
    assert load_engine_path(doc["config"]).state_dir == "/srv/x"


def test_offline_flag_is_json_on_the_engine_path():
    doc = shipped_doc("lab")
    doc["config"][P + "offline"] = True
    passed, _ = engine_encoding(doc["config"])
    assert passed[P + "offline"] == "true"
    assert load_engine_path(doc["config"]).offline is True


def test_a_secret_the_config_refers_to_is_not_an_unknown_key():
    doc = shipped_doc("lab")
    doc["config"][P + "deployments"][0]["api_key"] = {"config": "tinyApiKey"}
    doc["config"][P + "tinyApiKey"] = {"secure": "v1:abc"}
    spec = load_engine_path(doc["config"])
    assert spec.deployments[0].api_key.config == "tinyApiKey"


def test_unreadable_engine_config_is_one_clear_message(monkeypatch):
    from components.config import ConfigError, load_from_pulumi

    monkeypatch.setenv("PULUMI_CONFIG", "{not json")
    with pytest.raises(ConfigError, match="PULUMI_CONFIG.*fix:"):
        load_from_pulumi()


def test_validation_imports_nothing_that_reaches_a_node(tmp_path):
    """Loading a stack (both paths) imports no SSH, remote-command or network module of ours."""
    doc = shipped_doc("spark-duo")
    passed, secret = engine_encoding(doc["config"])
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from components.config import load_stack_file, load_from_pulumi\n"
        "load_stack_file(Path('stacks/Pulumi.spark-duo.yaml'))\n"
        "load_from_pulumi()\n"
        "ours = sorted(m for m in sys.modules if m.startswith('components'))\n"
        "print('\\n'.join(ours))\n"
        "print('paramiko' in sys.modules, 'huggingface_hub' in sys.modules)\n")
    env = {**os.environ, "PULUMI_CONFIG": json.dumps(passed), "PULUMI_CONFIG_SECRET_KEYS": json.dumps(secret)}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    *modules, flags = done.stdout.split("\n")[:-1]
    # The engines' registry (components/engines: command lines, plain data) is what `engine:` selects;
    # the launches (components/launches: which node runs which rank, plain data) what `topology:` selects;
    # components.names: the generated names the checks compare (constants and f-strings only);
    # components.platforms: what each gpu.kind is (plain data).
    assert all(m in ("components", "components.names")
               or m.startswith(("components.config", "components.engines", "components.launches",
                                "components.platforms"))
               for m in modules), modules
    assert flags == "False False"
