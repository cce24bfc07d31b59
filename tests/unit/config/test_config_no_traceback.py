"""No traceback for any input: each bad stack file below is one ConfigError naming the file, the
key path and a fix — from the stack file, and (where the engine could pass it at all) from the
config the engine hands the program."""

from __future__ import annotations

import pytest

from components.config import load_stack_file
from tests.unit.config.stacks import (P, REPO, both_paths_error, expect_config_error, file_error, load_engine_path,
                                      shipped_doc)


def duo() -> dict:
    return shipped_doc("spark-duo")


def raw_file_error(tmp_path, data: bytes | str, key: str, *words: str) -> str:
    path = tmp_path / "Pulumi.raw.yaml"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return expect_config_error(lambda: load_stack_file(path), str(path), key, *words)


def test_state_dir_elsewhere_is_valid_on_both_paths(tmp_path):
    doc = duo()
    doc["config"][P + "state_dir"] = "/srv/x"
    from tests.unit.config.stacks import write_doc
    assert load_stack_file(write_doc(tmp_path, doc)).state_dir == "/srv/x"
    assert load_engine_path(doc["config"]).state_dir == "/srv/x"


def test_state_dir_relative_is_one_message(tmp_path):
    doc = duo()
    doc["config"][P + "state_dir"] = "srv/x"
    both_paths_error(tmp_path, doc, P + "state_dir", "fix:")


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")], ids=["inf", "-inf", "nan"])
def test_memory_that_is_not_finite_is_refused(tmp_path, value):
    doc = duo()
    doc["config"][P + "nodes"][0]["gpu"]["memory_gb"] = value
    both_paths_error(tmp_path, doc, P + "nodes[0].gpu.memory_gb", "finite number")


def test_negative_memory_is_refused(tmp_path):
    doc = duo()
    doc["config"][P + "nodes"][0]["gpu"]["memory_gb"] = -8
    both_paths_error(tmp_path, doc, P + "nodes[0].gpu.memory_gb", "greater than 0")


def test_huge_memory_is_refused(tmp_path):
    doc = duo()
    doc["config"][P + "nodes"][0]["gpu"]["memory_gb"] = 1e308
    both_paths_error(tmp_path, doc, P + "nodes[0].gpu.memory_gb", "4096")


def test_a_5000_character_model_repo_is_refused(tmp_path):
    doc = duo()
    doc["config"][P + "models"][0]["repo"] = "Qwen/" + "x" * 5000
    text = file_error(tmp_path, doc, P + "models[0].repo", "characters long", "at most 4096")
    assert "x" * 200 not in text, "the message repeats the whole value"


def test_a_repo_too_long_for_a_directory_name_is_refused(tmp_path):
    doc = duo()
    doc["config"][P + "models"][0]["repo"] = "Qwen/" + "x" * 300
    both_paths_error(tmp_path, doc, P + "models[0].repo", "not allowed")


def test_a_very_long_string_anywhere_is_refused(tmp_path):
    doc = duo()
    doc["config"][P + "deployments"][0]["health"] = {"prompt": "y" * 5000}
    both_paths_error(tmp_path, doc, P + "deployments[0].health.prompt", "fix:")


def test_a_file_that_is_not_utf8(tmp_path):
    raw = (REPO / "stacks" / "Pulumi.lab.yaml").read_bytes()
    text = raw.replace(b"tiny-llama", b"tiny-\xff\xfellama")
    line = raw[:raw.index(b"tiny-llama")].count(b"\n") + 1
    raw_file_error(tmp_path, text, f"line {line}", "not UTF-8", "save the file as UTF-8")


def test_a_document_that_is_a_list(tmp_path):
    raw_file_error(tmp_path, "- config: {}\n", "(document)", "is a list", "config:")


def test_a_document_that_is_a_scalar(tmp_path):
    raw_file_error(tmp_path, "blackwell-serving\n", "(document)", "is a string", "config:")


def test_a_config_section_that_is_a_list(tmp_path):
    raw_file_error(tmp_path, "config:\n  - blackwell-serving:nodes\n", "config", "is a list")


def test_an_empty_file_asks_for_nodes(tmp_path):
    raw_file_error(tmp_path, "", P + "nodes", "required key is missing")


def test_a_misspelled_config_section(tmp_path):
    raw_file_error(tmp_path, "confg:\n  blackwell-serving:nodes: []\n", "confg", "unknown key of a stack file")


def test_yaml_syntax_error_names_the_line(tmp_path):
    raw_file_error(tmp_path, "config:\n  blackwell-serving:nodes: [\n", "line 3, column 1", "not valid YAML")


def test_null_top_level_value(tmp_path):
    doc = duo()
    doc["config"][P + "deployments"] = None
    both_paths_error(tmp_path, doc, P + "deployments", "is null")


def test_null_nested_value(tmp_path):
    doc = duo()
    doc["config"][P + "deployments"][0]["docker"] = None
    both_paths_error(tmp_path, doc, P + "deployments[0].docker", "is null")


def test_null_list_item(tmp_path):
    doc = duo()
    doc["config"][P + "nodes"][1] = None
    both_paths_error(tmp_path, doc, P + "nodes[1]", "fix:")


@pytest.mark.parametrize("path,value,key", [
    ([P + "nodes"], {"name": "x"}, "nodes"),
    ([P + "fabric"], [1, 2], "fabric"),
    ([P + "nodes", 0], "spark-1a32", "nodes[0]"),
    ([P + "nodes", 0, "ssh"], 22, "nodes[0].ssh"),
    ([P + "nodes", 0, "gpu", "count"], "four", "nodes[0].gpu.count"),
    ([P + "deployments", 0, "env"], ["A=1"], "deployments[0].env"),
    ([P + "deployments", 0, "extra_args"], "--enforce-eager", "deployments[0].extra_args"),
    ([P + "deployments", 0, "speculative"], {"method": [[1]]}, "deployments[0].speculative.method"),
    ([P + "ray", "port"], 6379.5, "ray.port"),
    ([P + "offline"], "maybe", "offline"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_wrong_type_at_any_level(tmp_path, path, value, key):
    doc = duo()
    here = doc["config"]
    for p in path[:-1]:
        here = here[p]
    here[path[-1]] = value
    both_paths_error(tmp_path, doc, P + key, "fix:")


def test_duplicate_nested_key(tmp_path):
    text = (REPO / "stacks" / "Pulumi.spark-duo.yaml").read_text()
    text = text.replace("      port: 8000\n", "      port: 8000\n      port: 8001\n")
    raw_file_error(tmp_path, text, P + "deployments[0].port", "appears twice", "keep one")


def test_duplicate_top_level_key(tmp_path):
    text = (REPO / "stacks" / "Pulumi.lab.yaml").read_text()
    text = text.replace("config:\n", "config:\n  blackwell-serving:retire: []\n", 1)
    raw_file_error(tmp_path, text, P + "retire", "appears twice")


def test_recursive_yaml_alias(tmp_path):
    raw_file_error(tmp_path, "config:\n  blackwell-serving:nodes: &a [*a]\n", P + "nodes[0]", "fix:")


def test_yes_and_dates_stay_text_as_the_engine_reads_them(tmp_path):
    """yaml.v3 (the engine) reads `yes` and 2024-01-01 as text; so does the stack file loader."""
    text = (REPO / "stacks" / "Pulumi.lab.yaml").read_text().replace("revision: lab-v1", "revision: 2024-01-01")
    path = tmp_path / "Pulumi.lab.yaml"
    path.write_text(text)
    assert load_stack_file(path).models[0].revision == "2024-01-01"


def test_aliases_that_expand_without_end(tmp_path):
    """A 'billion laughs' document is refused at once, not expanded."""
    lines = ["config:", "  a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    raw_file_error(tmp_path, "\n".join(lines) + "\n", "a4[7][8][8][8][8]", "more than 100000 values")


def test_two_aliases_of_a_recursive_list(tmp_path):
    raw_file_error(tmp_path, "config:\n  blackwell-serving:nodes: &a [*a, *a]\n", P + "nodes[0]", "fix:")
