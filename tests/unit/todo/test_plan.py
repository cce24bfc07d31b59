"""Engine data → todo items: which resources become items, their sentences, phases, nodes,
priorities, reasons, dependencies and order."""

from __future__ import annotations

import pytest

from components.render import render as render_template
from components.todo.describe import PHASES, step_tag
from components.todo.plan import build_items, step_metadata

from . import fixtures

LAB_ORDER = [
    # (id, node, phase, content)
    ("lab-1-glm-retire", "lab-1", "retire", "Stop and disable glm.service on lab-1"),
    ("vllm-lab-build", "lab-1", "image", "Build image vllm-lab on lab-1 (transformers>=5)"),
    ("vllm-lab-sync-lab-2", "lab-1", "image", "Copy image vllm-lab to lab-2 over the fabric"),
    ("tiny-upload", "lab-1", "model", "Upload model tiny from this machine to lab-1"),
    ("tiny-fetch", "lab-1", "model", "Upload model tiny from this machine to lab-1, hash and install it"),
    ("tiny-to-lab-2", "lab-1", "model", "Copy model tiny to lab-2 over the fabric"),
    ("tiny-ray-head-lab-1-install", "lab-1", "cluster", "Start Ray head on lab-1"),
    ("tiny-ray-worker-lab-2-install", "lab-2", "cluster", "Start Ray worker on lab-2"),
    ("tiny-ray-ready", "lab-1", "cluster", "Wait until every node has joined Ray cluster tiny-ray"),
    ("tiny-lab-1-install", "lab-1", "serve", "Install and start bws-tiny.service on lab-1"),
    ("tiny-health", "lab-1", "verify", "Health gate: a real chat completion from tiny"),
    ("lab-2-embeddings-check", "lab-2", "verify", "Check that embeddings.service stays up on lab-2 (never touched)"),
]


def test_first_preview_lists_every_command_once_in_order(lab_items):
    assert [(i.id, i.node, i.phase, i.content) for i in lab_items] == LAB_ORDER


def test_components_provider_and_stack_are_not_items(lab_items):
    assert all(i.urn.split("::")[2].endswith(("command:remote:Command", "command:remote:CopyToRemote"))
               for i in lab_items)


def test_every_item_starts_pending_with_reason_create(lab_items):
    assert {i.status for i in lab_items} == {"pending"}
    assert {i.reason for i in lab_items} == {"create"}


def test_priority_rule_kept_checks_are_normal_the_serve_path_high(lab_items):
    normal = [i.id for i in lab_items if i.priority == "normal"]
    assert normal == ["lab-2-embeddings-check"]


def test_phases_never_go_backwards_in_the_lab_list(lab_items):
    ranks = [PHASES.index(i.phase) for i in lab_items]
    assert ranks == sorted(ranks)


def test_dependencies_come_from_the_plan_and_precede_their_dependents(lab_items):
    by_id = {i.id: i for i in lab_items}
    assert by_id["tiny-ray-ready"].depends_on == ["tiny-ray-head-lab-1-install", "tiny-ray-worker-lab-2-install"]
    assert by_id["tiny-health"].depends_on == ["tiny-lab-1-install"]
    assert set(by_id["tiny-lab-1-install"].depends_on) == {
        "lab-1-glm-retire", "vllm-lab-build", "vllm-lab-sync-lab-2", "tiny-fetch", "tiny-to-lab-2", "tiny-ray-ready"}
    position = {i.id: n for n, i in enumerate(lab_items)}
    for item in lab_items:
        for dep in item.depends_on:
            assert position[dep] < position[item.id], (dep, item.id)


def test_same_steps_are_skipped_and_dependencies_pass_through_them(lab_spec):
    # A converged lab where only the engine unit changed: only it and nothing else is pending.
    same = {n: "same" for n in fixtures.COMMANDS} | {c: "same" for c in fixtures.COMPONENTS}
    ops = same | {"tiny-lab-1-install": "update", "tiny-fetch": "update"}
    items = build_items(step_metadata(fixtures.first_preview_events(ops)), fixtures.plan(ops), lab_spec)
    assert [i.id for i in items] == ["tiny-fetch", "tiny-lab-1-install"]
    # tiny-lab-1-install waits for tiny-fetch directly; tiny-to-lab-2 (same) is not an item.
    assert items[1].depends_on == ["tiny-fetch"]
    assert items[1].reason == "update: create changed"
    assert items[1].content == "Rewrite and restart bws-tiny.service on lab-1"


def test_a_dependency_through_an_unchanged_resource_is_kept(lab_spec):
    # tiny-fetch changes, tiny-to-lab-2 is the same, and the health gate's unit is pending: the
    # order fetch → (to-lab-2) → unit must survive although to-lab-2 is not in the list.
    plan = fixtures.plan()
    unit = fixtures.command_urn("tiny-lab-1-install")
    plan["resourcePlans"][unit]["goal"]["dependencies"] = [fixtures.command_urn("tiny-to-lab-2")]
    same = {n: "same" for n in fixtures.COMMANDS}
    ops = same | {"tiny-fetch": "update", "tiny-lab-1-install": "update"}
    items = build_items(step_metadata(fixtures.first_preview_events(ops)), plan, lab_spec)
    assert {i.id: i.depends_on for i in items}["tiny-lab-1-install"] == ["tiny-fetch"]


def test_a_dependency_on_a_component_means_its_pending_children(lab_spec):
    plan = fixtures.plan()
    health = fixtures.command_urn("tiny-health")
    plan["resourcePlans"][health]["goal"]["dependencies"] = [fixtures.component_urn("tiny-ray")]
    items = build_items(step_metadata(fixtures.first_preview_events()), plan, lab_spec)
    assert {i.id: i.depends_on for i in items}["tiny-health"] == [
        "tiny-ray-head-lab-1-install", "tiny-ray-worker-lab-2-install", "tiny-ray-ready"]


def test_replace_and_delete_reasons_and_sentences(lab_spec):
    ops = {n: "same" for n in fixtures.COMMANDS} | {"vllm-lab-build": "replace", "lab-1-glm-retire": "delete",
                                                     "tiny-to-lab-2": "delete"}
    items = build_items(step_metadata(fixtures.first_preview_events(ops)), fixtures.plan(ops), lab_spec)
    got = {i.id: (i.reason, i.content, i.priority) for i in items}
    assert got == {
        "lab-1-glm-retire": ("delete", "Start glm.service again on lab-1 (restore)", "normal"),
        "vllm-lab-build": ("replace: create changed", "Build image vllm-lab on lab-1 (transformers>=5)", "high"),
        "tiny-to-lab-2": ("delete", "Remove model tiny from lab-2", "normal"),
    }
    assert len(items) == 3  # the three steps of the replace are one item


def test_without_a_plan_file_items_have_no_dependencies_but_keep_phase_order(lab_spec):
    items = build_items(step_metadata(fixtures.first_preview_events()), None, lab_spec)
    assert all(i.depends_on == [] for i in items)
    assert [i.phase for i in items] == sorted((i.phase for i in items), key=PHASES.index)
    # Without dependencies, lab-1's items of a phase come before lab-2's.
    assert [i.id for i in items if i.phase == "cluster"] == [
        "tiny-ray-head-lab-1-install", "tiny-ray-ready", "tiny-ray-worker-lab-2-install"]


def test_without_the_stack_config_nodes_are_hosts_and_sentences_stay_plain():
    items = build_items(step_metadata(fixtures.first_preview_events()), fixtures.plan(), None)
    by_id = {i.id: i for i in items}
    assert by_id["vllm-lab-build"].node == "198.18.0.11"
    assert by_id["vllm-lab-build"].content == "Build image vllm-lab on 198.18.0.11"
    assert by_id["tiny-to-lab-2"].content == "Copy model tiny to lab-2 over the fabric"


@pytest.mark.parametrize("template, values, tag", [
    ("scripts/install-unit.sh.j2", dict(unit_name="bws-tiny.service", unit_text="[Unit]\n", env_file=None,
                                         must_stay_up=True), "unit bws-tiny.service"),
    ("scripts/retire-service.sh.j2", dict(unit="glm.service", state_dir="/var/lib/blackwell-serving"),
     "retire glm.service"),
    ("scripts/check-kept.sh.j2", dict(unit="embeddings.service"), "keep embeddings.service"),
])
def test_step_tag_reads_the_real_templates(template, values, tag):
    assert step_tag(render_template(template, **values)) == tag


def test_step_tag_of_something_else_is_none():
    assert step_tag("echo hello") is None
    assert step_tag(None) is None


def test_real_engine_shapes_a_component_dependency_becomes_its_child():
    """Data captured once from the real engine: the plan file expands depends_on=[component] to
    the component's custom child, component steps carry no `custom`, and the item graph follows."""
    import json
    from .conftest import DATA
    doc = json.loads((DATA / "real-engine-probe.json").read_text())
    items = build_items(step_metadata(doc["events"]), doc["plan"], None)
    assert [(i.id, i.phase, i.kind, i.depends_on) for i in items] == [
        ("img-build", "image", "image-build", []),
        ("after", "serve", "other", ["img-build"]),
    ]
    assert items[0].content == "Build image img on 198.18.0.11"


def test_preflight_checks_gate_the_first_change(lab_spec, monkeypatch):
    # Checks that must pass before anything is stopped: the fabric link (no dependencies) and
    # the engine probe (after the image and the model); retiring glm waits for both.
    monkeypatch.setitem(fixtures.COMPONENTS, "lab-1-fabric", ("blackwell:preflight:FabricCheck", "lab"))
    monkeypatch.setitem(fixtures.COMPONENTS, "tiny-preflight", ("blackwell:preflight:EngineProbe", "lab"))
    monkeypatch.setitem(fixtures.COMMANDS, "lab-1-fabric-check",
                        ("Command", "lab-1-fabric", "lab-1", "preflight fabric lab-1", []))
    monkeypatch.setitem(fixtures.COMMANDS, "tiny-preflight",
                        ("Command", "tiny-preflight", "lab-1", "preflight tiny", ["vllm-lab-build", "tiny-fetch"]))
    kind, parent, node, tag, deps = fixtures.COMMANDS["lab-1-glm-retire"]
    monkeypatch.setitem(fixtures.COMMANDS, "lab-1-glm-retire",
                        (kind, parent, node, tag, ["lab-1-fabric-check", "tiny-preflight"]))
    items = build_items(step_metadata(fixtures.first_preview_events()), fixtures.plan(), lab_spec)
    ids = [i.id for i in items]
    assert ids[0] == "lab-1-fabric-check"
    assert ids.index("tiny-preflight") > ids.index("tiny-fetch") > ids.index("vllm-lab-build")
    assert ids.index("lab-1-glm-retire") > ids.index("tiny-preflight")
    by_id = {i.id: i for i in items}
    assert (by_id["tiny-preflight"].phase, by_id["tiny-preflight"].content) == (
        "preflight", "Preflight: the engine image of tiny knows its model (probe on lab-1)")
    assert by_id["lab-1-fabric-check"].content.startswith("Preflight: the fabric link of lab-1 is up")


def test_the_bandwidth_check_is_a_preflight_step_between_the_lab_nodes(lab_spec, monkeypatch):
    monkeypatch.setitem(fixtures.COMPONENTS, "tiny-bandwidth", ("blackwell:preflight:FabricBandwidth", "lab"))
    monkeypatch.setitem(fixtures.COMMANDS, "tiny-bandwidth-check",
                        ("Command", "tiny-bandwidth", "lab-1", "preflight bandwidth tiny",
                         ["vllm-lab-build", "vllm-lab-sync-lab-2", "tiny-fetch", "tiny-to-lab-2"]))
    items = build_items(step_metadata(fixtures.first_preview_events()), fixtures.plan(), lab_spec)
    [item] = [i for i in items if i.id == "tiny-bandwidth-check"]
    assert (item.kind, item.phase, item.node, item.priority) == ("preflight-bandwidth", "preflight", "lab-1", "high")
    assert item.content == "Preflight: measure the fabric's all-reduce bandwidth between lab-1 and lab-2 (gloo)"
    # Without the stack's config, it still says what it is.
    [bare] = [i for i in build_items(step_metadata(fixtures.first_preview_events()), fixtures.plan(), None)
              if i.id == "tiny-bandwidth-check"]
    assert bare.content == "Preflight: measure the fabric's all-reduce bandwidth of tiny (from 198.18.0.11)"


def test_drift_the_program_observed_is_the_reason(lab_spec):
    """An update whose only difference is what the probe saw reads as that; with a changed
    script too, both are said."""
    observed = {"tiny-lab-1-install": ("drift: observed inactive", ["observed"]),
                "lab-1-glm-retire": ("drift: glm.service observed active again", ["create", "observed"])}
    events = fixtures.first_preview_events({n: "update" if n in observed else "same" for n in fixtures.COMMANDS})
    for e in events:
        md = (e.get("resourcePreEvent") or {}).get("metadata", {})
        name = md.get("urn", "").split("::")[-1]
        if name in observed and md.get("op") == "update":
            md["new"]["inputs"]["observed"], md["diffs"] = observed[name]
    got = {i.id: i.reason for i in build_items(step_metadata(events), None, lab_spec)}
    assert got == {"tiny-lab-1-install": "drift: observed inactive",
                   "lab-1-glm-retire": "update: create changed; drift: glm.service observed active again"}
