"""Following an `up`: recorded engine events → status transitions, the steps' output lines,
summary."""

from __future__ import annotations

import itertools

from components.todo.live import LiveTodo
from components.todo.plan import declared_steps

from . import fixtures


def pre(name: str, op: str = "create") -> dict:
    md = {"op": op, "urn": fixtures.command_urn(name), "type": fixtures.command_type(name)}
    md["old" if op == "delete" else "new"] = fixtures.command_state(name)
    return {"resourcePreEvent": {"metadata": md}}


def done(name: str) -> dict:
    return {"resOutputsEvent": {"metadata": {"op": "create", "urn": fixtures.command_urn(name),
                                             "type": fixtures.command_type(name)}}}


def failed(name: str) -> dict:
    return {"resOpFailedEvent": {"metadata": {"op": "create", "urn": fixtures.command_urn(name)}, "status": 1, "steps": 1}}


def diag(name: str | None, message: str, severity: str = "info") -> dict:
    d = {"message": message, "color": "never", "severity": severity}
    if name:
        d["urn"] = fixtures.command_urn(name)
    return {"diagnosticEvent": d}


def live_for(items, **kw) -> LiveTodo:
    ticks = itertools.count()
    return LiveTodo(items, stamp=lambda: "12:00:00", clock=lambda: 60.0 * next(ticks), **kw)


def feed(live: LiveTodo, events) -> list[str]:
    return [line for e in events for line in live.handle(e)]


def test_statuses_follow_pre_outputs_and_failed_events(lab_items):
    live = live_for(lab_items)
    feed(live, [pre("lab-1-glm-retire"), pre("vllm-lab-build"), done("lab-1-glm-retire"), failed("vllm-lab-build")])
    status = {i.id: i.status for i in live.items}
    assert status["lab-1-glm-retire"] == "completed"
    assert status["vllm-lab-build"] == "failed"
    assert status["tiny-health"] == "pending"
    assert live.transitions == [("lab-1-glm-retire", "pending", "in_progress"),
                                ("vllm-lab-build", "pending", "in_progress"),
                                ("lab-1-glm-retire", "in_progress", "completed"),
                                ("vllm-lab-build", "in_progress", "failed")]


def test_one_line_per_transition_with_stamp_number_and_node(lab_items):
    live = live_for(lab_items)
    lines = feed(live, [pre("tiny-to-lab-2"), done("tiny-to-lab-2")])
    assert lines == [
        "12:00:00  [~] 11. Copy model tiny to lab-2 over the fabric [lab-1]  pending -> in_progress",
        "12:00:00  [x] 11. Copy model tiny to lab-2 over the fabric [lab-1]  in_progress -> completed",
    ]


def test_a_local_step_moves_like_a_remote_one(lab_items):
    live = live_for(lab_items)
    assert feed(live, [pre("tiny-upload"), done("tiny-upload")])[-1] == (
        "12:00:00  [x]  7. Upload model tiny from this machine to lab-1 [lab-1]  in_progress -> completed")


def test_same_steps_components_the_stack_and_repeats_print_nothing(lab_items):
    live = live_for(lab_items)
    comp = {"resourcePreEvent": {"metadata": {"op": "create", "urn": fixtures.component_urn("tiny-ray"),
                                              "type": "blackwell:cluster:RayCluster",
                                              "new": fixtures.component_state("tiny-ray")}}}
    stack = fixtures.node_outputs_event(fixtures.step_records())
    assert feed(live, [pre("tiny-health", op="same"), comp, stack, {"summaryEvent": {}}, {"preludeEvent": {}}]) == []
    assert feed(live, [pre("tiny-fetch")]) != []
    assert feed(live, [pre("tiny-fetch")]) == []
    assert {i.status for i in live.items if i.id != "tiny-fetch"} == {"pending"}


def test_a_listed_item_the_up_found_already_done_is_completed(lab_items):
    # The preview listed it; by the time of `up` it was the same: its outputs arrive without work.
    live = live_for(lab_items)
    lines = feed(live, [pre("tiny-health", op="same"), done("tiny-health"), pre("tiny-health")])
    assert lines == ["12:00:00  [x] 17. Health gate: a real chat completion from tiny [lab-1]  pending -> completed"]


def test_a_failed_item_is_not_marked_completed_afterwards(lab_items):
    live = live_for(lab_items)
    feed(live, [pre("tiny-fetch"), failed("tiny-fetch"), done("tiny-fetch")])
    assert live.by_urn[fixtures.command_urn("tiny-fetch")].status == "failed"


def test_an_items_output_is_shown_line_by_line_under_its_number(lab_items):
    # The scripts already keep their stderr to progress; each line of it is shown, without
    # colour codes, a carriage return starting a new line, blank lines dropped.
    live = live_for(lab_items)
    lines = feed(live, [
        diag("tiny-to-lab-2", "[blackwell tiny-to-lab-2 on lab-1] copying 1.2G over the fabric\n", "info#err"),
        diag("tiny-to-lab-2", "<{%reset%}>  10%   95.00MB/s\r  20%   96.00MB/s<{%reset%}>\n\n"),
        diag("vllm-lab-build", "\x1b[1m#5 [2/3] RUN pip install 'transformers>=5'\x1b[0m\n"),
    ])
    assert lines == ["12:00:00      11. [blackwell tiny-to-lab-2 on lab-1] copying 1.2G over the fabric",
                     "12:00:00      11. 10%   95.00MB/s",
                     "12:00:00      11. 20%   96.00MB/s",
                     "12:00:00       5. #5 [2/3] RUN pip install 'transformers>=5'"]


def test_warnings_and_errors_always_show_verbose_shows_the_engines_other_messages(lab_items):
    quiet = live_for(lab_items)
    assert feed(quiet, [diag(None, "node lab-1: private key not found", "warning")]) == [
        "12:00:00      warning: node lab-1: private key not found"]
    assert feed(quiet, [diag("tiny-health", "Process exited with status 1\n", "error")]) == [
        "12:00:00      17. error: Process exited with status 1"]
    assert feed(quiet, [diag(None, "resource plugin command is starting")]) == []
    loud = live_for(lab_items, verbose=True)
    assert feed(loud, [diag(None, "resource plugin command is starting")]) == [
        "12:00:00      resource plugin command is starting"]
    assert feed(loud, [diag(None, "grpc: dialing", "debug")]) == []


def test_a_step_the_preview_did_not_list_becomes_a_new_item(lab_items):
    items = [i for i in lab_items if i.id != "tiny-health"]
    live = live_for(items, steps=declared_steps(fixtures.first_preview_events()))
    lines = feed(live, [pre("tiny-health")])
    assert lines[0] == "12:00:00  + new item 19: Health gate: a real chat completion from tiny (create)"
    assert lines[1] == ("12:00:00  [~] 19. Health gate: a real chat completion from tiny [lab-1]  "
                        "pending -> in_progress")
    assert (live.items[-1].id, live.items[-1].node, live.items[-1].phase) == ("tiny-health", "lab-1", "verify")


def test_a_new_deletion_is_described_by_the_last_ups_record_and_an_undeclared_step_by_its_name(lab_items):
    previous = fixtures.previous_records(["tiny-to-lab-2"])
    live = live_for([i for i in lab_items if i.id not in ("tiny-to-lab-2", "tiny-health")],
                    steps=declared_steps([], previous))
    lines = feed(live, [pre("tiny-to-lab-2", op="delete"), pre("tiny-health")])
    assert lines[0] == "12:00:00  + new item 18: Remove model tiny from lab-2 (delete)"
    assert lines[2] == "12:00:00  + new item 19: Run tiny-health (create)"
    assert [(i.priority, i.node) for i in live.items[-2:]] == [("normal", "lab-1"), ("high", None)]


def test_summary_counts_every_status(lab_items):
    live = live_for(lab_items)
    feed(live, [pre("lab-1-glm-retire"), done("lab-1-glm-retire"), pre("vllm-lab-build"), failed("vllm-lab-build"),
                pre("tiny-upload")])
    text = live.summary("error: update failed")
    first = text.splitlines()[0]
    assert first.startswith("12:00:00  up failed: 19 items, 1 completed, 1 failed, 1 interrupted, 16 not reached in ")
    assert "  failed: 5. Build image vllm-lab on lab-1 (transformers>=5) [lab-1]" in text
    assert text.splitlines()[-1] == "  engine: error: update failed"


def test_a_clean_run_ends_finished(lab_items):
    live = live_for(lab_items)
    for item in lab_items:
        feed(live, [pre(item.id), done(item.id)])
    assert live.counts() == {"pending": 0, "in_progress": 0, "completed": 19, "failed": 0}
    assert live.summary().split("  ", 1)[1].startswith("up finished: 19 items, 19 completed, 0 failed in ")


def test_a_rollback_shows_each_undo_as_an_item_of_its_own(lab_items):
    """components/steps/rollback.py logs each undo on the stack as it starts and ends."""
    from components.steps.rollback import progress_line

    live = live_for(lab_items)
    feed(live, [pre("lab-1-glm-retire"), done("lab-1-glm-retire"), pre("tiny-health"), failed("tiny-health")])
    sentence = "Start glm.service again on lab-1 (restore)"
    lines = feed(live, [diag(None, progress_line("started", "lab-1", sentence)),
                        diag(None, progress_line("done", "lab-1", sentence))])
    assert lines == [f"12:00:00  + new item 20: Rollback: {sentence} (rollback after a failure)",
                     f"12:00:00  [~] 20. Rollback: {sentence} [lab-1]  pending -> in_progress",
                     f"12:00:00  [x] 20. Rollback: {sentence} [lab-1]  in_progress -> completed"]
    assert live.items[-1].status == "completed" and live.items[-1].node == "lab-1"
