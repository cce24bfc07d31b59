"""Engine data → todo items: which resources become items, their sentences (as the components
declared them), phases, nodes, priorities, reasons, dependencies and order; what each step is
(declared_steps), and the plain description of a step nothing declared."""

from __future__ import annotations

import pytest

from components.steps.remote import DRIFT_VAR
from components.steps.info import STEPS_OUTPUT, StepInfo
from components.todo.describe import PHASES, Description, describe
from components.todo.plan import UNKNOWN, declared_steps, merge_steps, reason_of, state_records

from . import fixtures

LAB_ORDER = [
    # (id, node, phase, content). Among the items whose dependencies are done, the earliest
    # phase goes first: the engine probe right after the model it needs, the retirement as soon
    # as every check passed (before the model's copy to lab-2, a later phase).
    ("lab-1-fabric-check", "lab-1", "preflight", "Preflight: the fabric link of lab-1 is up (address, MTU, RDMA ports, peers)"),
    ("lab-1-resources-check", "lab-1", "preflight", "Preflight: lab-1 has no GPU and none is expected (gpu.kind cpu); "
     "its memory reported against its deployments' claim of 6.9 GB, not enforced"),
    ("lab-2-fabric-check", "lab-2", "preflight", "Preflight: the fabric link of lab-2 is up (address, MTU, RDMA ports, peers)"),
    ("lab-2-resources-check", "lab-2", "preflight", "Preflight: lab-2 has no GPU and none is expected (gpu.kind cpu); "
     "its memory reported against its deployments' claim of 6.9 GB, not enforced"),
    ("vllm-lab-build", "lab-1", "image", "Build image vllm-lab on lab-1 (transformers>=5)"),
    ("vllm-lab-sync-lab-2", "lab-1", "image", "Copy image vllm-lab to lab-2 over the fabric"),
    ("tiny-upload", "lab-1", "model", "Upload model tiny from this machine to lab-1"),
    ("tiny-fetch", "lab-1", "model", "Hash and install model tiny on lab-1"),
    ("tiny-preflight-engine", "lab-1", "preflight", "Preflight: the engine image of tiny knows its model and takes its flags (probe on lab-1)"),
    ("lab-1-glm-retire", "lab-1", "retire", "Stop and disable glm.service on lab-1"),
    ("tiny-to-lab-2", "lab-1", "model", "Copy model tiny to lab-2 over the fabric"),
    ("tiny-ray-head-lab-1-install", "lab-1", "cluster", "Start Ray head on lab-1"),
    ("tiny-ray-worker-lab-2-install", "lab-2", "cluster", "Start Ray worker on lab-2"),
    ("tiny-ray-ready", "lab-1", "cluster", "Wait until every node has joined Ray cluster tiny-ray"),
    ("tiny-lab-1-env", "lab-1", "serve", "Write the secret environment of bws-tiny.service on lab-1"),
    ("tiny-lab-1-install", "lab-1", "serve", "Install and start bws-tiny.service on lab-1"),
    ("tiny-health", "lab-1", "verify", "Health gate: a real chat completion from tiny"),
    ("tiny-watchdog-timer", "lab-1", "verify",
     "Arm the watchdog of tiny: a completion every 30 s, a restart after 3 failures in a row"),
    ("lab-2-embeddings-check", "lab-2", "verify", "Check that embeddings.service stays up on lab-2 (never touched)"),
]

ALL_SAME = {n: "same" for n in fixtures.COMMANDS} | {c: "same" for c in fixtures.COMPONENTS}


def test_first_preview_lists_every_step_once_in_order(lab_items):
    assert [(i.id, i.node, i.phase, i.content) for i in lab_items] == LAB_ORDER


def test_only_the_steps_are_items_remote_and_local(lab_items):
    types = {i.id: i.urn.split("::")[2].split("$")[-1] for i in lab_items}
    assert set(types.values()) == {"command:remote:Command", "command:local:Command"}
    assert [n for n, t in types.items() if t == "command:local:Command"] == ["tiny-upload"]
    assert sorted(types) == sorted(fixtures.COMMANDS)  # no component, provider or stack


def test_every_item_starts_pending_with_reason_create(lab_items):
    assert {i.status for i in lab_items} == {"pending"}
    assert {i.reason for i in lab_items} == {"create"}


def test_priorities_are_the_declared_ones(lab_items):
    assert [i.id for i in lab_items if i.priority == "normal"] == ["tiny-watchdog-timer", "lab-2-embeddings-check"]
    assert {i.id: i.priority for i in lab_items} == {n: c.step.priority for n, c in fixtures.COMMANDS.items()}


def test_node_is_where_the_step_runs_as_declared_not_the_connection(lab_items):
    # The connection is a secret in the events: there is no host to read. The copy to lab-2
    # runs on the build node and the upload on this machine, both declared on lab-1.
    assert fixtures.command_state("vllm-lab-sync-lab-2")["inputs"]["connection"] == fixtures.SECRET
    by_id = {i.id: i for i in lab_items}
    assert (by_id["vllm-lab-sync-lab-2"].node, by_id["tiny-to-lab-2"].node, by_id["tiny-upload"].node) == (
        "lab-1", "lab-1", "lab-1")
    assert by_id["tiny-ray-worker-lab-2-install"].node == "lab-2"


def test_dependencies_come_from_the_plan_and_precede_their_dependents(lab_items):
    by_id = {i.id: i for i in lab_items}
    assert by_id["tiny-ray-ready"].depends_on == ["tiny-ray-head-lab-1-install", "tiny-ray-worker-lab-2-install"]
    assert by_id["tiny-health"].depends_on == ["tiny-ray-head-lab-1-install", "tiny-ray-worker-lab-2-install",
                                              "tiny-lab-1-env", "tiny-lab-1-install"]
    assert by_id["tiny-fetch"].depends_on == ["tiny-upload"]  # the local upload before the remote fetch
    assert set(by_id["tiny-lab-1-install"].depends_on) == {
        "lab-1-fabric-check", "lab-2-fabric-check", "lab-1-resources-check", "lab-2-resources-check",
        "tiny-preflight-engine", "lab-1-glm-retire", "vllm-lab-build",
        "vllm-lab-sync-lab-2", "tiny-fetch", "tiny-to-lab-2", "tiny-ray-ready", "tiny-lab-1-env",
        "tiny-ray-head-lab-1-install", "tiny-ray-worker-lab-2-install"}   # their starts restart it
    position = {i.id: n for n, i in enumerate(lab_items)}
    for item in lab_items:
        assert [position[d] for d in item.depends_on] == sorted(position[d] for d in item.depends_on)
        for dep in item.depends_on:
            assert position[dep] < position[item.id], (dep, item.id)


def test_preflight_checks_gate_the_first_change(lab_items):
    ids = [i.id for i in lab_items]
    retire = ids.index("lab-1-glm-retire")
    assert {i.phase for i in lab_items[:retire]} <= {"preflight", "image", "model"}
    assert max(ids.index(g) for g in fixtures.GATES) < retire
    assert ids.index("tiny-preflight-engine") > max(ids.index("tiny-fetch"), ids.index("vllm-lab-build"))


def test_same_steps_are_skipped_and_dependencies_pass_through_them(lab_spec):
    # A converged lab where only the model fetch and the engine unit changed.
    ops = ALL_SAME | {"tiny-lab-1-install": "update", "tiny-fetch": "update"}
    items = fixtures.todo(fixtures.first_preview_events(ops), fixtures.plan(ops), lab_spec)
    assert [i.id for i in items] == ["tiny-fetch", "tiny-lab-1-install"]
    # tiny-lab-1-install waits for tiny-fetch directly; tiny-to-lab-2 (same) is not an item.
    assert items[1].depends_on == ["tiny-fetch"]
    assert (items[1].reason, items[1].content) == ("update: script changed",
                                                  "Rewrite bws-tiny.service on lab-1 and restart it if what it runs changed")
    # No redo declared: an update says what the first run said.
    assert items[0].content == "Hash and install model tiny on lab-1"


def test_a_dependency_through_an_unchanged_resource_is_kept(lab_spec):
    # tiny-fetch changes, tiny-to-lab-2 is the same, and the unit waits (here) only for
    # tiny-to-lab-2: the order fetch → (to-lab-2) → unit must survive although to-lab-2 is not
    # in the list.
    plan = fixtures.plan()
    unit = fixtures.command_urn("tiny-lab-1-install")
    plan["resourcePlans"][unit]["goal"]["dependencies"] = [fixtures.command_urn("tiny-to-lab-2")]
    ops = {n: "same" for n in fixtures.COMMANDS} | {"tiny-fetch": "update", "tiny-lab-1-install": "update"}
    items = fixtures.todo(fixtures.first_preview_events(ops), plan, lab_spec)
    assert {i.id: i.depends_on for i in items}["tiny-lab-1-install"] == ["tiny-fetch"]


def test_a_dependency_on_a_component_means_its_pending_children(lab_spec):
    plan = fixtures.plan()
    health = fixtures.command_urn("tiny-health")
    plan["resourcePlans"][health]["goal"]["dependencies"] = [fixtures.component_urn("tiny-ray")]
    items = fixtures.todo(fixtures.first_preview_events(), plan, lab_spec)
    assert {i.id: i.depends_on for i in items}["tiny-health"] == [
        "tiny-ray-head-lab-1-install", "tiny-ray-worker-lab-2-install", "tiny-ray-ready"]


def test_replace_and_delete_reasons_sentences_and_priorities(lab_spec):
    ops = {n: "same" for n in fixtures.COMMANDS} | {"vllm-lab-build": "replace", "lab-1-glm-retire": "delete",
                                                     "tiny-to-lab-2": "delete"}
    events = fixtures.first_preview_events(ops)
    items = fixtures.todo(events, fixtures.plan(ops), lab_spec, fixtures.previous_records())
    got = {i.id: (i.reason, i.content, i.priority, i.node, i.phase) for i in items}
    assert got == {
        "lab-1-glm-retire": ("delete", "Start glm.service again on lab-1 (restore)", "normal", "lab-1", "retire"),
        "vllm-lab-build": ("replace: script changed", "Build image vllm-lab on lab-1 (transformers>=5)", "high",
                           "lab-1", "image"),
        "tiny-to-lab-2": ("delete", "Remove model tiny from lab-2", "normal", "lab-1", "model"),
    }
    assert len(items) == 3  # the three steps of the replace are one item


def test_deleted_steps_are_described_from_the_last_up(lab_spec):
    # The program no longer has the retirement: only the last `up`'s output knows what it was.
    ops = {n: "same" for n in fixtures.COMMANDS} | {"lab-1-glm-retire": "delete"}
    events = fixtures.first_preview_events(ops)
    urn = fixtures.command_urn("lab-1-glm-retire")
    assert urn not in declared_steps(events)
    [gone] = fixtures.todo(events, fixtures.plan(ops), lab_spec, fixtures.previous_records())
    assert (gone.content, gone.priority, gone.node) == ("Start glm.service again on lab-1 (restore)", "normal", "lab-1")
    # Without the last up's outputs it is still listed, by its name.
    [bare] = fixtures.todo(events, fixtures.plan(ops), lab_spec)
    assert (bare.content, bare.priority, bare.node, bare.reason) == ("Remove lab-1-glm-retire", "normal", None, "delete")


def test_a_deletion_is_normal_priority_even_of_a_high_step(lab_spec):
    ops = {n: "same" for n in fixtures.COMMANDS} | {"tiny-health": "delete", "lab-2-embeddings-check": "delete"}
    items = fixtures.todo(fixtures.first_preview_events(ops), fixtures.plan(ops), lab_spec, fixtures.previous_records())
    assert fixtures.COMMANDS["tiny-health"].step.priority == "high"
    assert {i.id: (i.content, i.priority) for i in items} == {
        "tiny-health": ("Drop the health gate of tiny", "normal"),
        "lab-2-embeddings-check": ("Stop checking embeddings.service on lab-2", "normal")}


def test_an_undeclared_step_is_listed_by_its_name(lab_spec):
    # A program of another version declared nothing for the health gate.
    events = fixtures.first_preview_events()
    for e in events:
        outputs = ((e.get("resOutputsEvent") or {}).get("metadata") or {}).get("new", {}).get("outputs")
        if outputs:
            outputs[STEPS_OUTPUT] = [r for r in outputs[STEPS_OUTPUT] if not r["urn"].endswith("::tiny-health")]
    items = fixtures.todo(events, fixtures.plan(), lab_spec)
    assert [i.id for i in items] == [row[0] for row in LAB_ORDER]  # its dependencies still order it
    [health] = [i for i in items if i.id == "tiny-health"]
    assert (health.content, health.phase, health.priority, health.node) == ("Run tiny-health", "serve", "high", None)


def test_without_a_plan_file_items_have_no_dependencies_but_keep_phase_then_node_order(lab_spec):
    items = fixtures.todo(fixtures.first_preview_events(), None, lab_spec)
    assert all(i.depends_on == [] for i in items)
    assert [i.phase for i in items] == sorted((i.phase for i in items), key=PHASES.index)
    # Without dependencies, lab-1's items of a phase come before lab-2's (the stack config's order).
    assert [i.id for i in items if i.phase == "preflight"] == [
        "lab-1-fabric-check", "lab-1-resources-check", "tiny-preflight-engine", "lab-2-fabric-check",
        "lab-2-resources-check"]
    assert [i.id for i in items if i.phase == "cluster"] == [
        "tiny-ray-head-lab-1-install", "tiny-ray-ready", "tiny-ray-worker-lab-2-install"]


def test_without_the_stack_config_nodes_and_sentences_stay_and_ties_go_by_id():
    """Ties are broken by the item's id, not by the engine's event order, which differs between
    two previews of the same stack (steps are registered concurrently): one stack, one list."""
    items = fixtures.todo(fixtures.first_preview_events(), None, None)
    by_id = {i.id: i for i in items}
    assert (by_id["vllm-lab-build"].node, by_id["vllm-lab-build"].content) == (
        "lab-1", "Build image vllm-lab on lab-1 (transformers>=5)")
    assert [i.id for i in items if i.phase == "preflight"] == [
        "lab-1-fabric-check", "lab-1-resources-check", "lab-2-fabric-check", "lab-2-resources-check",
        "tiny-preflight-engine"]
    assert [i.id for i in items if i.phase == "cluster"] == [
        "tiny-ray-head-lab-1-install", "tiny-ray-ready", "tiny-ray-worker-lab-2-install"]


def test_the_order_does_not_depend_on_the_engines_event_order(lab_spec):
    events = fixtures.first_preview_events()
    forward = [i.id for i in fixtures.todo(events, fixtures.plan(), lab_spec)]
    assert [i.id for i in fixtures.todo(list(reversed(events)), fixtures.plan(), lab_spec)] == forward


def test_the_bandwidth_check_is_a_preflight_step_that_gates_the_first_change(lab_spec, monkeypatch):
    components, commands = fixtures.with_bandwidth_check()
    monkeypatch.setattr(fixtures, "COMPONENTS", components)
    monkeypatch.setattr(fixtures, "COMMANDS", commands)
    items = fixtures.todo(fixtures.first_preview_events(), fixtures.plan(), lab_spec)
    ids = [i.id for i in items]
    [item] = [i for i in items if i.id == fixtures.BANDWIDTH]
    assert (item.phase, item.node, item.priority) == ("preflight", "lab-1", "high")
    assert item.content == "Preflight: measure the fabric's all-reduce bandwidth between lab-1 and lab-2 (gloo)"
    # On a quiet link: after the model's copy to lab-2; before anything is stopped.
    assert ids.index("tiny-to-lab-2") < ids.index(fixtures.BANDWIDTH) < ids.index("lab-1-glm-retire")


# -- reasons ---------------------------------------------------------------------------------

def _update_with(drift: dict[str, str], diffs: dict[str, list[str]], lab_spec) -> dict[str, str]:
    ops = {n: "update" if n in diffs else "same" for n in fixtures.COMMANDS}
    events = fixtures.first_preview_events(ops, drift=drift, diffs=diffs)
    return {i.id: i.reason for i in fixtures.todo(events, None, lab_spec)}


def test_drift_the_program_observed_is_the_reason_without_its_stamp(lab_spec):
    """An update whose only difference is the observation reads as that; with a changed script
    too, both are said."""
    got = _update_with({"tiny-lab-1-install": "drift: observed inactive",
                        "lab-1-glm-retire": "drift: glm.service observed active again"},
                       {"tiny-lab-1-install": ["environment"], "lab-1-glm-retire": ["create", "environment"]}, lab_spec)
    assert got == {"tiny-lab-1-install": "drift: observed inactive",
                   "lab-1-glm-retire": "update: script changed; drift: glm.service observed active again"}


def test_a_node_that_could_not_be_asked_is_the_reason(lab_spec):
    why = "unreachable: ssh: connect to host 198.18.0.12 port 22: No route to host"
    got = _update_with({"tiny-ray-worker-lab-2-install": why}, {"tiny-ray-worker-lab-2-install": ["environment"]},
                       lab_spec)
    assert got == {"tiny-ray-worker-lab-2-install": why}


def test_only_the_stamp_is_stripped_from_the_observation(lab_spec):
    seen = "drift: http://127.0.0.1:8000/health not answering (HTTP 503)"
    got = _update_with({"tiny-health": seen}, {"tiny-health": ["environment"]}, lab_spec)
    assert got == {"tiny-health": seen}
    state = fixtures.command_state("tiny-health", seen)
    assert state["inputs"]["environment"] == {DRIFT_VAR: f"{seen} (observed {fixtures.STAMP})"}


def _step(op: str, diffs: list[str] | None = None, drift: str | None = None, detailed: dict | None = None):
    state = fixtures.command_state("tiny-lab-1-install", drift)
    md = {"op": op, "urn": state["urn"], "type": state["type"]}
    md["old" if op == "delete" else "new"] = state
    if diffs is not None:
        md["diffs"] = diffs
    if detailed is not None:
        md["detailedDiff"] = detailed
    [s] = merge_steps([md])
    return s


@pytest.mark.parametrize("op, diffs, drift, reason", [
    ("update", ["create", "stdin"], None, "update: script changed"),
    ("update", ["delete"], None, "update: undo script changed"),
    ("update", ["stdin", "connection"], None, "update: script, connection changed"),
    ("update", ["environment"], None, "update"),  # the environment changed but says nothing
    ("update", [], None, "update"),
    ("replace", ["create", "environment"], "drift: observed failed", "replace: script changed; drift: observed failed"),
    ("delete", ["environment"], "drift: observed inactive", "delete"),  # a delete runs the undo script anyway
    ("create", None, "drift: observed inactive", "create"),  # not in the diffs: not the reason
])
def test_reason_of(op, diffs, drift, reason):
    assert reason_of(_step(op, diffs, drift)) == reason


def test_a_step_fed_by_a_pending_steps_output_says_so_not_script_changed():
    """A health gate whose trigger is the start its unit's install step will do: the preview
    cannot know that command line yet (the engine's unknown), and its script did not change."""
    step = _step("update", ["create", "environment"], "drift: http://127.0.0.1:8000/health not answering")
    step.inputs["create"] = UNKNOWN
    assert reason_of(step) == ("update: takes an earlier step's output; "
                               "drift: http://127.0.0.1:8000/health not answering")
    step.diffs.append("stdin")
    assert reason_of(step) == "update: script changed, takes an earlier step's output; " \
                              "drift: http://127.0.0.1:8000/health not answering"


def test_reason_of_reads_the_detailed_diff_when_the_engine_gives_no_diffs():
    detailed = {f"environment.{DRIFT_VAR}": {"diffKind": "update", "inputDiff": True}, "stdin": {"diffKind": "update", "inputDiff": True}}
    assert reason_of(_step("update", None, "drift: observed inactive", detailed)) == \
        "update: script changed; drift: observed inactive"


# -- what each step is -----------------------------------------------------------------------

def test_declared_steps_reads_the_stack_output_of_the_preview():
    declared = declared_steps(fixtures.first_preview_events())
    assert declared == {fixtures.command_urn(n): c.step for n, c in fixtures.COMMANDS.items()}


@pytest.mark.parametrize("kind", ["resOutputsEvent", "resourcePreEvent"])
def test_the_previews_output_wins_over_the_last_ups(kind):
    fetch, gone = fixtures.command_urn("tiny-fetch"), fixtures.command_urn("lab-1-glm-retire")
    previous = [
        {"urn": fetch, "node": "lab-1", "phase": "model", "do": "Download model tiny on lab-1"},
        {"urn": gone, "node": "lab-1", "phase": "retire", "do": "Stop and disable glm.service on lab-1",
         "undo": "Start glm.service again on lab-1 (restore)"}]
    event = fixtures.node_outputs_event(fixtures.step_records(["tiny-fetch"]))
    if kind == "resourcePreEvent":
        event = {"resourcePreEvent": event.pop("resOutputsEvent")}
    declared = declared_steps([event], previous)
    assert declared[fetch].do == "Hash and install model tiny on lab-1"
    assert declared[gone].sentence("delete") == "Start glm.service again on lab-1 (restore)"
    assert set(declared) == {fetch, gone}


def test_steps_are_declared_by_whichever_component_carries_the_output():
    """Each Node component carries its own steps' records; outputs without them declare nothing."""
    lab1 = fixtures.node_outputs_event(fixtures.step_records(["tiny-fetch"]), node="lab-1")
    lab2 = fixtures.node_outputs_event(fixtures.step_records(["lab-2-fabric-check"]), node="lab-2")
    assert set(declared_steps([lab1, lab2])) == {fixtures.command_urn("tiny-fetch"),
                                                 fixtures.command_urn("lab-2-fabric-check")}
    other = fixtures.node_outputs_event([], node="lab-1")
    del other["resOutputsEvent"]["metadata"]["new"]["outputs"][STEPS_OUTPUT]
    assert declared_steps([other]) == {}


@pytest.mark.parametrize("output", [
    "04da6b54-80e4-46f7-96ec-b56ff0331ba9",  # unknown during the preview
    {"urn": "x"},                             # not a list
    None,
])
def test_an_output_of_another_shape_leaves_the_last_ups(output):
    event = fixtures.node_outputs_event(output)
    previous = fixtures.previous_records(["tiny-fetch"])
    assert declared_steps([event], previous) == {fixtures.command_urn("tiny-fetch"): fixtures.COMMANDS["tiny-fetch"].step}
    assert declared_steps([event]) == {}


def test_malformed_records_are_skipped_the_rest_kept():
    good = fixtures.step_records(["tiny-fetch"])[0]
    urn = fixtures.command_urn("tiny-health")
    records = [
        "tiny-health: a sentence",                                                  # not a record
        {"urn": 7, "node": "lab-1", "phase": "verify", "do": "x"},                  # urn not a string
        {"node": "lab-1", "phase": "verify", "do": "x"},                            # no urn
        {"urn": urn, "node": "lab-1", "phase": "deploy", "do": "x"},                # unknown phase
        {"urn": urn, "node": "lab-1", "phase": "verify", "do": "x", "priority": "urgent"},  # unknown priority
        {"urn": urn, "node": "lab-1", "phase": "verify"},                           # no sentence
        good,
        {"urn": fixtures.command_urn("tiny-upload"), "node": "lab-1", "phase": "model", "do": "Upload",
         "kind": "from a later version"},                                          # an extra key is ignored
    ]
    declared = declared_steps([fixtures.node_outputs_event(records)])
    assert declared == {good["urn"]: fixtures.COMMANDS["tiny-fetch"].step,
                        fixtures.command_urn("tiny-upload"): StepInfo("lab-1", "model", do="Upload")}


def test_records_round_trip_with_every_sentence():
    declared = declared_steps([fixtures.node_outputs_event(fixtures.step_records())])
    unit = declared[fixtures.command_urn("tiny-lab-1-install")]
    assert (unit.sentence("create"), unit.sentence("update"), unit.sentence("replace"), unit.sentence("delete")) == (
        "Install and start bws-tiny.service on lab-1",
        "Rewrite bws-tiny.service on lab-1 and restart it if what it runs changed",
        "Rewrite bws-tiny.service on lab-1 and restart it if what it runs changed",
        "Stop and remove bws-tiny.service from lab-1")
    assert "redo" not in fixtures.step_records(["tiny-fetch"])[0]  # None is left out of a record


# -- describe ----------------------------------------------------------------------------------

@pytest.mark.parametrize("op, expected", [
    ("create", Description("Run tiny-health", "serve", "high", None)),
    ("update", Description("Run tiny-health", "serve", "high", None)),
    ("replace", Description("Run tiny-health", "serve", "high", None)),
    ("delete", Description("Remove tiny-health", "serve", "normal", None)),
])
def test_describe_falls_back_to_the_name_of_an_undeclared_resource(op, expected):
    assert describe(None, op, "tiny-health") == expected


def test_describe_uses_the_declared_sentence_for_the_op():
    info = StepInfo("lab-2", "verify", do="Check that embeddings.service stays up on lab-2", priority="normal")
    assert describe(info, "create", "x") == Description(info.do, "verify", "normal", "lab-2")
    assert describe(info, "update", "x").content == info.do  # no redo: the first run's sentence
    # No undo declared: the first run's sentence, undone; a deletion is always normal.
    high = StepInfo("lab-1", "image", do="Build image vllm-lab on lab-1")
    assert describe(high, "delete", "x") == Description("Undo: Build image vllm-lab on lab-1", "image", "normal", "lab-1")
    assert describe(high, "replace", "x").priority == "high"


def test_state_records_gathers_every_components_records_from_an_export():
    deployment = fixtures.previous_deployment(["tiny-fetch", "lab-1-glm-retire"])
    deployment["resources"].append({"urn": "x", "type": "command:remote:Command", "outputs": {"stdout": ""}})
    assert [r["urn"] for r in state_records(deployment)] == [fixtures.command_urn("tiny-fetch"),
                                                              fixtures.command_urn("lab-1-glm-retire")]
    assert state_records({}) == []
