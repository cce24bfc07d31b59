"""Copies past one peer are relayed by the peers that hold the bytes (components/resources/relay.py):
N peers in ceil(log2(N+1)) rounds, each sender one copy at a time; in the component graph the
copy runs on its sender and waits for what brought the bytes there."""

from __future__ import annotations

import math

import pytest

from components.resources.relay import relay_plan
from tests.unit.mocked import script_of, snapshot
from tests.unit.test_graph import dep_names, host_of


@pytest.mark.parametrize("n", range(1, 17))
def test_n_peers_take_ceil_log2_n_plus_1_rounds_and_each_sender_holds_the_bytes_first(n):
    peers = [f"p{i}" for i in range(1, n + 1)]
    plan = relay_plan("s", peers)
    assert [r for _, r, _, _ in plan] == peers
    assert max(rnd for *_, rnd, _ in plan) == math.ceil(math.log2(n + 1))
    got = {"s": 0}                                    # holder → round it got the bytes
    busy: dict[str, set[int]] = {}
    for sender, receiver, rnd, after in plan:
        assert got[sender] < rnd                      # the sender holds the bytes by then
        assert rnd not in busy.setdefault(sender, set())  # one copy per sender per round
        busy[sender].add(rnd)
        assert all(a in got for a in after) and (sender == "s" or sender in after)
        got[receiver] = rnd


def test_one_peer_is_the_plain_copy():
    assert relay_plan("s", ["p1"]) == [("s", "p1", 1, [])]


def four_node_lab():
    from components.config import load_stack_file
    from tests.unit.mocked import REPO
    spec = load_stack_file(REPO / "stacks" / "Pulumi.lab.yaml")
    node = spec.nodes[1]
    extra = [node.model_copy(update={"name": f"lab-{i}", "host": f"198.18.0.1{i}",
                                     "fabric_address": f"198.19.0.1{i}"}) for i in (3, 4)]
    images = [i.model_copy(update={"nodes": ["lab-1", "lab-2", "lab-3", "lab-4"]}) for i in spec.images]
    models = [m.model_copy(update={"nodes": ["lab-1", "lab-2", "lab-3", "lab-4"]}) for m in spec.models]
    return spec.model_copy(update={"nodes": [*spec.nodes, *extra], "images": images, "models": models})


def test_a_four_node_stack_relays_image_and_model_copies_from_the_peers_that_hold_them():
    s = snapshot("lab", four_node_lab())
    image = "vllm-lab"
    for copy, first in ((f"{image}-sync-lab-{{}}", f"{image}-build"), ("tiny-to-lab-{}", "tiny-fetch")):
        c2, c3, c4 = (s.by_name(copy.format(i)) for i in (2, 3, 4))
        assert host_of(c2) == host_of(c3) == "198.18.0.11"        # the source: round 1 and round 2
        assert host_of(c4) == "198.18.0.12"                       # lab-2 passes it on in round 2
        assert copy.format(2) in dep_names(c4)                    # once it holds it
        assert copy.format(2) in dep_names(c3)                    # the source's previous copy
        assert first in dep_names(c2)
        # lab-2 → lab-4 over the fabric, to lab-4's fabric address.
        assert "198.19.0.14" in script_of(c4)
