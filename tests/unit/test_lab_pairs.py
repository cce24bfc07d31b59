"""The lab's pairs (tests/lab/topology.py): a test run's nodes(2) is its pair, and the test stacks
are placed on it (tests/lab/helpers.py on_this_pair) with the pair's addresses and host keys."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.lab import topology as lab
from tests.lab.helpers import LAB_CONFIG, on_this_pair

P = "blackwell-serving:"


def test_pair_1_is_the_default_and_the_lab_stack_files_nodes(monkeypatch):
    monkeypatch.delenv("BWS_LAB_PAIR", raising=False)
    assert [n.index for n in lab.nodes(2)] == [1, 2]
    config = yaml.safe_load(LAB_CONFIG.read_text())["config"]
    assert [n["host"] for n in config[P + "nodes"]] == [n.mgmt_ip for n in lab.nodes(2)]
    placed = copy.deepcopy(config)
    on_this_pair(placed)
    assert placed == config


def test_pair_2_places_the_stack_on_nodes_3_and_4(monkeypatch):
    monkeypatch.setenv("BWS_LAB_PAIR", "2")
    node3, node4 = lab.nodes(2)
    assert (node3.index, node4.index) == (3, 4)
    config = yaml.safe_load(LAB_CONFIG.read_text())["config"]
    on_this_pair(config)
    nodes = config[P + "nodes"]
    assert [n["name"] for n in nodes] == ["lab-1", "lab-2"]          # the stack's names stay
    assert [(n["host"], n["fabric_address"]) for n in nodes] == [(node3.mgmt_ip, node3.fabric_ip),
                                                                  (node4.mgmt_ip, node4.fabric_ip)]
    assert [n["ssh"]["host_key"] for n in nodes] == [node3.host_public_key, node4.host_public_key]
    assert node3.host_public_key != lab.Node(1).host_public_key


@pytest.mark.parametrize("raw", ["0", "3", "two", ""])
def test_a_pair_the_lab_cannot_have_names_the_fix(monkeypatch, raw):
    monkeypatch.setenv("BWS_LAB_PAIR", raw)
    with pytest.raises(ValueError, match=r"fix: 1\.\.2"):
        lab.nodes(2)


def test_every_node_and_the_glm_places_cover_both_pairs():
    assert [n.index for n in lab.every_node()] == list(range(1, lab.NODES_MAX + 1))
    assert lab.NODES_DEFAULT % lab.PAIR_SIZE == 0 and lab.NODES_DEFAULT // lab.PAIR_SIZE == 2
    assert {lab.GLM_NODE, lab.EMBEDDINGS_NODE} == {1, 2}   # places within a pair
