"""Following an `up`: recorded engine events → status transitions, progress lines, summary."""

from __future__ import annotations

import itertools

from components.todo.live import LiveTodo

from . import fixtures


def pre(name: str, op: str = "create") -> dict:
    return {"resourcePreEvent": {"metadata": {"op": op, "urn": fixtures.command_urn(name), "type": "command:remote:Command",
                                              "new": fixtures.command_state(name)}}}


def done(name: str) -> dict:
    return {"resOutputsEvent": {"metadata": {"op": "create", "urn": fixtures.command_urn(name)}}}


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
        "12:00:00  [~]  6. Copy model tiny to lab-2 over the fabric [lab-1]  pending -> in_progress",
        "12:00:00  [x]  6. Copy model tiny to lab-2 over the fabric [lab-1]  in_progress -> completed",
    ]


def test_same_steps_components_and_repeats_print_nothing(lab_items):
    live = live_for(lab_items)
    comp = {"resourcePreEvent": {"metadata": {"op": "create", "urn": fixtures.component_urn("tiny-ray"),
                                              "type": "blackwell:cluster:RayCluster",
                                              "new": fixtures.component_state("tiny-ray")}}}
    assert feed(live, [pre("tiny-health", op="same"), comp, {"summaryEvent": {}}, {"preludeEvent": {}}]) == []
    assert feed(live, [pre("tiny-fetch")]) != []
    assert feed(live, [pre("tiny-fetch")]) == []


def test_a_listed_item_the_up_found_already_done_is_completed(lab_items):
    # The preview listed it; by the time of `up` it was the same: its outputs arrive without work.
    live = live_for(lab_items)
    lines = feed(live, [pre("tiny-health", op="same"), done("tiny-health"), pre("tiny-health")])
    assert lines == ["12:00:00  [x] 11. Health gate: a real chat completion from tiny [lab-1]  pending -> completed"]


def test_a_failed_item_is_not_marked_completed_afterwards(lab_items):
    live = live_for(lab_items)
    feed(live, [pre("tiny-fetch"), failed("tiny-fetch"), done("tiny-fetch")])
    assert live.by_urn[fixtures.command_urn("tiny-fetch")].status == "failed"


def test_tagged_script_lines_are_progress_other_output_is_quiet(lab_items):
    live = live_for(lab_items)
    lines = feed(live, [
        diag("tiny-to-lab-2", "[blackwell model tiny -> lab-2] copying 1.2G over the fabric\n"),
        diag("tiny-to-lab-2", "sending incremental file list\n"),
        diag("tiny-to-lab-2", "<{%reset%}>[blackwell model tiny -> lab-2] copied and verified<{%reset%}>\n"),
    ])
    assert lines == ["12:00:00       6. [model tiny -> lab-2] copying 1.2G over the fabric",
                     "12:00:00       6. [model tiny -> lab-2] copied and verified"]


def test_rsync_progress_is_shown_once_per_tenth(lab_items):
    live = live_for(lab_items)
    chunks = "\r".join(f"  {n * 10_000_000:,}  {p}%   95.00MB/s    0:00:{p % 60:02d}"
                       for n, p in enumerate([0, 3, 9, 10, 14, 25, 26, 99, 100]))
    lines = feed(live, [diag("tiny-to-lab-2", chunks)])
    shown = [ln.split()[3] for ln in lines]
    assert shown == ["0%", "10%", "25%", "99%", "100%"]


def test_docker_load_and_build_steps_are_progress(lab_items):
    live = live_for(lab_items)
    lines = feed(live, [diag("vllm-lab-sync-lab-2", "Loaded image: blackwell-serving/vllm-lab:0a1b2c3d4e5f\n"),
                        diag("vllm-lab-build", "#5 [2/3] RUN pip install 'transformers>=5'\n#5 0.512 Collecting x\n")])
    assert lines == ["12:00:00       3. Loaded image: blackwell-serving/vllm-lab:0a1b2c3d4e5f",
                     "12:00:00       2. #5 [2/3] RUN pip install 'transformers>=5'"]


def test_warnings_and_errors_always_show_verbose_shows_the_rest(lab_items):
    quiet = live_for(lab_items)
    assert feed(quiet, [diag(None, "node lab-1: private key not found", "warning")]) == [
        "12:00:00      warning: node lab-1: private key not found"]
    assert feed(quiet, [diag("tiny-health", "waiting for /health", "info#err")]) == []
    loud = live_for(lab_items, verbose=True)
    assert feed(loud, [diag("tiny-health", "waiting for /health", "info#err")]) == [
        "12:00:00      11. waiting for /health"]


def test_a_step_the_preview_did_not_list_becomes_a_new_item(lab_items):
    items = [i for i in lab_items if i.id != "tiny-health"]
    live = live_for(items)
    lines = feed(live, [pre("tiny-health")])
    assert lines[0] == "12:00:00  + new item 12: Health gate: a real chat completion from tiny (create)"
    assert lines[1].endswith("pending -> in_progress")
    assert live.items[-1].id == "tiny-health"


def test_summary_counts_every_status(lab_items):
    live = live_for(lab_items)
    feed(live, [pre("lab-1-glm-retire"), done("lab-1-glm-retire"), pre("vllm-lab-build"), failed("vllm-lab-build"),
                pre("tiny-upload")])
    text = live.summary("error: update failed")
    first = text.splitlines()[0]
    assert first.startswith("12:00:00  up failed: 12 items, 1 completed, 1 failed, 1 interrupted, 9 not reached in ")
    assert "  failed: 2. Build image vllm-lab on lab-1 (transformers>=5) [lab-1]" in text
    assert text.splitlines()[-1] == "  engine: error: update failed"


def test_a_clean_run_ends_finished(lab_items):
    live = live_for(lab_items)
    for item in lab_items:
        name = item.id
        feed(live, [pre(name), done(name)])
    assert live.counts() == {"pending": 0, "in_progress": 0, "completed": 12, "failed": 0}
    assert live.summary().split("  ", 1)[1].startswith("up finished: 12 items, 12 completed, 0 failed in ")
