"""The optional layer registry (fabric.layer_registry, components/resources/layer_registry.py): its schema,
its place in the graph (only when configured, one per build node of an image copied to peers;
the copies from that node wait for it, its fill waits for every copy), and what its scripts do."""

from __future__ import annotations

import copy

import pytest

from components.config.schema import LayerRegistry
from tests.unit.config.stacks import P, load_engine_path, shipped_doc
from tests.unit.mocked import STACKS, script_of, snapshot
from tests.unit.test_graph import closure, dep_names, host_of, snap


# What a script that uses the registry says first (templates/scripts/_push_layers.sh.j2).
USES_REGISTRY = "layer_registry="


def registry_steps(s) -> dict:
    return {r.name: r for r in s.commands() if r.name.startswith("layer-registry-")}


def copied_images(spec):
    return [i for i in spec.images if i.runtime == "docker" and set(i.nodes) - {i.build_node}]


def test_defaults():
    r = LayerRegistry()
    assert (r.image, r.port, r.storage) == ("registry:2.8.3", 5055, "/var/lib/blackwell-serving/layer-registry")


@pytest.mark.parametrize("stack", STACKS)
def test_a_registry_and_its_fills_only_where_configured(stack):
    s = snap(stack)
    steps = registry_steps(s)
    enabled = s.spec.fabric is not None and s.spec.fabric.layer_registry is not None
    if not enabled:
        assert not steps
        assert not any(USES_REGISTRY in (script_of(r) or "") for r in s.commands())
        return
    images = copied_images(s.spec)
    assert images, f"{stack}: a layer registry with no image copied to a peer"
    host = {n.name: n.host for n in s.spec.nodes}
    assert sorted(steps) == sorted([f"layer-registry-{n}-start" for n in {i.build_node for i in images}]
                                   + [f"layer-registry-{i.build_node}-{i.name}" for i in images])
    for img in images:
        start, fill = f"layer-registry-{img.build_node}-start", f"layer-registry-{img.build_node}-{img.name}"
        assert host_of(steps[start]) == host_of(steps[fill]) == host[img.build_node]
        syncs = {f"{img.name}-sync-{n}" for n in img.nodes if n != img.build_node}
        # The fill waits for the build and for every copy: the first distribution never waits for it.
        assert {f"{img.name}-build", start} | syncs <= dep_names(steps[fill])
        for sync in syncs:
            assert fill not in closure(s, sync)
            assert start in dep_names(s.by_name(sync))
            assert f"{USES_REGISTRY}127.0.0.1:{s.spec.fabric.layer_registry.port}\n" in script_of(s.by_name(sync))
    # Nothing that serves waits for a fill.
    for u in s.units:
        assert not any(n.startswith("layer-registry-") and not n.endswith("-start")
                       for n in closure(s, f"{u._name}-install"))


def relay_spec():
    """The lab with four nodes holding its engine image and the registry on: lab-2 passes the
    image on to lab-4 (components/resources/relay.py)."""
    doc = shipped_doc("lab")
    c = doc["config"]
    for i in (3, 4):
        node = copy.deepcopy(c[P + "nodes"][1])
        node.update(name=f"lab-{i}", host=f"198.18.0.1{i}", fabric_address=f"198.19.0.1{i}")
        c[P + "nodes"].append(node)
    c[P + "images"][0]["nodes"] = ["lab-1", "lab-2", "lab-3", "lab-4"]
    c[P + "fabric"]["layer_registry"] = {"port": 5056}
    return load_engine_path(c, "lab")


def test_copies_relayed_by_a_peer_keep_docker_save():
    s = snapshot("lab", relay_spec())
    fill = s.by_name("layer-registry-lab-1-vllm-lab")
    assert {f"vllm-lab-sync-lab-{i}" for i in (2, 3, 4)} <= dep_names(fill)
    for peer, sender in (("lab-2", "198.18.0.11"), ("lab-3", "198.18.0.11"), ("lab-4", "198.18.0.12")):
        sync = s.by_name(f"vllm-lab-sync-{peer}")
        assert host_of(sync) == sender
        from_build_node = sender == "198.18.0.11"
        assert ("layer-registry-lab-1-start" in dep_names(sync)) == from_build_node
        assert (f"{USES_REGISTRY}127.0.0.1:5056\n" in script_of(sync)) == from_build_node


def test_the_registry_is_loopback_only_and_its_scripts_quote_what_they_are_given():
    s = snap("spark-duo")
    start = script_of(s.by_name("layer-registry-spark-1a32-start"))
    assert "-p 127.0.0.1:5055:5000" in start and "--restart unless-stopped" in start
    assert "-e REGISTRY_STORAGE_DELETE_ENABLED=true registry:2.8.3" in start
    assert "-v /var/lib/blackwell-serving/layer-registry:/var/lib/registry" in start
    assert "curl -fsS --noproxy '*' --max-time 5" in start
    remove = script_of(s.by_name("layer-registry-spark-1a32-start"), "delete")
    assert "docker rm -f bws-layer-registry" in remove and "rm -rf /var/lib/blackwell-serving/layer-registry" in remove
    assert "drop_layer_refs bws" in remove
    fill = s.by_name("layer-registry-spark-1a32-vllm-qwen35")
    assert "push_layers hellohal2064/vllm-qwen3.5-gb10:latest bws/vllm-qwen35" in script_of(fill)
    assert not fill.inputs.get("delete")


def test_a_change_of_the_registry_replaces_its_container():
    """The container's label is the digest of its configuration: another port, another label."""
    doc = shipped_doc("spark-duo")
    labels = set()
    for port in (5055, 5056):
        doc["config"][P + "fabric"]["layer_registry"]["port"] = port
        start = script_of(snapshot("spark-duo", load_engine_path(doc["config"], "spark-duo"))
                          .by_name("layer-registry-spark-1a32-start"))
        [label] = [w for w in start.split() if w.startswith("org.blackwell-serving.config=")]
        labels.add(label)
    assert len(labels) == 2
