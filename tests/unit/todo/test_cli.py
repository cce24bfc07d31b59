"""The command end to end without the engine (--events/--plan/--steps replay a recorded preview;
a stand-in for the engine's preview for --record), and the SDK-event → wire-dict conversion the
live path relies on."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest
from pulumi.automation import events as sdk_events

from components.steps.info import STEPS_OUTPUT
from components.todo import __main__ as cli
from components.todo.engine import slim_events, slim_plan, wire
from components.todo.plan import build_items, declared_steps, step_metadata

from . import fixtures
from .conftest import DATA
from .test_plan import LAB_ORDER
from .test_views import SCHEMA


@pytest.fixture
def recorded(tmp_path):
    (tmp_path / "stacks").mkdir()
    shutil.copy(DATA / "Pulumi.lab.yaml", tmp_path / "stacks" / "Pulumi.lab.yaml")
    (tmp_path / "events.json").write_text(json.dumps(slim_events(fixtures.first_preview_events())))
    (tmp_path / "plan.json").write_text(json.dumps(slim_plan(fixtures.plan())))
    (tmp_path / "steps.json").write_text(json.dumps(fixtures.step_records()))
    return tmp_path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def replay(recorded, *more) -> list[str]:
    return ["--stack", "lab", "--work-dir", str(recorded), "--events", str(recorded / "events.json"), *more]


def test_cli_json_from_a_recorded_preview_is_valid_and_says_what_each_step_is(recorded, capsys):
    code, out, _ = run(capsys, *replay(recorded, "--plan", str(recorded / "plan.json"),
                                       "--steps", str(recorded / "steps.json"), "--format", "json"))
    assert code == 0
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert [d["content"] for d in doc] == [row[3] for row in LAB_ORDER]
    assert doc[-1]["priority"] == "normal"


def test_cli_without_a_steps_file_lists_the_steps_by_name(recorded, capsys):
    # A recording keeps no stack output (slim_events); without steps.json nothing says what a
    # step is, and the list still stands.
    code, out, _ = run(capsys, *replay(recorded, "--plan", str(recorded / "plan.json"), "--format", "json"))
    assert code == 0
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert sorted(d["content"] for d in doc) == sorted(f"Run {n}" for n in fixtures.COMMANDS)


def test_cli_text_names_nodes_from_the_declared_steps(recorded, capsys):
    code, out, _ = run(capsys, *replay(recorded, "--plan", str(recorded / "plan.json"),
                                       "--steps", str(recorded / "steps.json")))
    assert code == 0
    assert "\nlab-1\n" in out and "\nlab-2\n" in out and "(no node)" not in out and "198.18.0.11" not in out


def test_cli_mermaid_without_a_plan_has_no_edges(recorded, capsys):
    code, out, _ = run(capsys, *replay(recorded, "--steps", str(recorded / "steps.json"), "--format", "mermaid"))
    assert code == 0 and "graph TD" in out and "-->" not in out


def test_cli_refuses_up_on_a_recording(recorded, capsys):
    code, _, err = run(capsys, *replay(recorded, "--up"))
    assert code == 2 and "cannot replay" in err


def test_cli_without_the_engine_says_how_to_get_it(recorded, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(recorded))
    code, _, err = run(capsys, "--stack", "lab", "--work-dir", str(recorded))
    assert code == 1 and "scripts/install-engine.sh" in err


def test_cli_reports_a_bad_stack_config_in_one_message(recorded, capsys):
    bad = recorded / "stacks" / "Pulumi.lab.yaml"
    bad.write_text(bad.read_text().replace("tensor_parallel: 2", "tensor_parallel: 3"))
    code, _, err = run(capsys, *replay(recorded))
    assert code == 1 and "blackwell-serving:deployments[0]" in err and "Traceback" not in err


def test_cli_record_then_replay_gives_the_same_list(recorded, capsys, monkeypatch, tmp_path):
    """A preview (here a stand-in for the engine's) recorded with --record and replayed from its
    three files lists the same items, the deleted step described from the last up's output."""
    ops = {n: "same" for n in fixtures.COMMANDS} | {"lab-1-glm-retire": "delete", "tiny-fetch": "update"}
    events = fixtures.first_preview_events(ops, drift={"tiny-fetch": "drift: model cache absent or incomplete"},
                                           diffs={"tiny-fetch": ["stdin", "environment"]})
    monkeypatch.setattr(cli.engine, "engine_env_ok", lambda: None)
    monkeypatch.setattr(cli.engine, "preview", lambda stack, work_dir, on_event=None: (
        events, fixtures.plan(ops), fixtures.previous_deployment()))
    out_dir = tmp_path / "record"
    code, live, _ = run(capsys, "--stack", "lab", "--work-dir", str(recorded), "--record", str(out_dir),
                        "--format", "json-full")
    assert code == 0
    assert sorted(p.name for p in out_dir.iterdir()) == ["events.json", "plan.json", "steps.json"]
    doc = json.loads(live)
    assert {d["id"]: (d["content"], d["priority"], d["reason"]) for d in doc} == {
        "lab-1-glm-retire": ("Start glm.service again on lab-1 (restore)", "normal", "delete"),
        "tiny-fetch": ("Hash and install model tiny on lab-1", "high",
                       "update: script changed; drift: model cache absent or incomplete")}
    steps = json.loads((out_dir / "steps.json").read_text())
    assert {r["urn"] for r in steps} == {fixtures.command_urn(n) for n in fixtures.COMMANDS}
    code, replayed, _ = run(capsys, "--stack", "lab", "--work-dir", str(recorded),
                            "--events", str(out_dir / "events.json"), "--plan", str(out_dir / "plan.json"),
                            "--steps", str(out_dir / "steps.json"), "--format", "json-full")
    assert code == 0 and replayed == live


def test_sdk_events_convert_back_to_the_wire_shape():
    raw = fixtures.first_preview_events({"tiny-fetch": "update", "vllm-lab-build": "replace", "tiny-health": "update"},
                                        drift={"tiny-health": "drift: observed inactive"})
    converted = [wire(sdk_events.EngineEvent.from_json(e)) for e in raw]
    assert declared_steps(converted) == declared_steps(raw) != {}
    a = fixtures.todo(raw, fixtures.plan(), None)
    b = fixtures.todo(converted, fixtures.plan(), None)
    assert [x.full() for x in a] == [y.full() for y in b]
    assert {x.id: x.reason for x in b}["tiny-health"] == "drift: observed inactive"
    [md] = [e["resourcePreEvent"]["metadata"] for e in converted
            if e.get("resourcePreEvent") and e["resourcePreEvent"]["metadata"]["urn"] == fixtures.command_urn("tiny-health")]
    assert set(md) >= {"op", "urn", "type", "new", "diffs"} and md["new"]["inputs"]["connection"] == fixtures.SECRET
    [outputs] = [e["resOutputsEvent"]["metadata"]["new"]["outputs"] for e in converted if e.get("resOutputsEvent")]
    assert outputs[STEPS_OUTPUT] == fixtures.step_records()
    d = wire(sdk_events.EngineEvent.from_json(
        {"sequence": 1, "timestamp": 2, "diagnosticEvent": {"message": "m", "color": "never", "severity": "info#err",
                                                            "urn": "u"}}))
    assert d["diagnosticEvent"] == {"message": "m", "color": "never", "severity": "info#err", "urn": "u"}
    failed = wire(sdk_events.EngineEvent.from_json(
        {"resOpFailedEvent": {"metadata": {"op": "create", "urn": "u", "type": "t", "provider": ""}, "status": 1, "steps": 1}}))
    assert failed["resOpFailedEvent"]["metadata"]["urn"] == "u"


def test_recordings_keep_what_the_list_needs_and_drop_the_rest():
    ops = {"tiny-lab-1-install": "update", "lab-1-glm-retire": "replace"}
    events = fixtures.first_preview_events(ops, drift={"tiny-lab-1-install": "drift: observed failed"})
    plan = fixtures.plan(ops)
    plan["resourcePlans"][fixtures.command_urn("tiny-fetch")]["goal"]["inputDiff"] = {"adds": {"stdin": "ciphertext"}}
    slim_e, slim_p = slim_events(events), slim_plan(plan)
    assert "ciphertext" not in json.dumps(slim_p)
    assert all("resourcePreEvent" in e for e in slim_e)
    steps = declared_steps(events)
    full = [x.full() for x in fixtures.todo(events, plan, None)]
    assert {x["id"]: x["reason"] for x in full}["tiny-lab-1-install"] == "drift: observed failed"
    assert [x.full() for x in build_items(step_metadata(slim_e), slim_p, None, steps)] == full


def test_a_failed_engine_run_is_explained_by_its_error_diagnostics():
    errors = cli.ErrorCollector()
    for e in [{"diagnosticEvent": {"severity": "warning", "message": "key not found\n"}},
              {"diagnosticEvent": {"severity": "error", "urn": fixtures.command_urn("tiny-fetch"),
                                   "message": "Process exited with status 1\n"}},
              {"diagnosticEvent": {"severity": "error", "urn": fixtures.command_urn("tiny-fetch"),
                                   "message": "Process exited with status 1\n"}},
              {"resOutputsEvent": {"metadata": {}}}]:
        errors(e)
    assert errors.explain(RuntimeError("code: 1\n stdout: noise")) == "  tiny-fetch: Process exited with status 1"
    empty = cli.ErrorCollector()
    assert empty.explain(RuntimeError("code: 255\n stderr: error: no Pulumi.yaml project file found")) == \
        "  stderr: error: no Pulumi.yaml project file found"


def test_a_failed_steps_block_shows_once_also_when_a_rollback_quotes_it():
    from components.steps.failure import condense
    from components.steps.rollback import Rollback

    block = ("FAILED: Install and start bws-tiny.service on lab-1\n  node:   lab-1\n  status: exit 1\n"
             "  said:   bws-tiny.service failed to start")
    step_error = ('Process exited with status 1: running "exec env BWS_STEP=\'x\' bash -c \'s=$(head -c 9)\'":\n'
                  "[blackwell unit bws-tiny.service] starting\n\n" + block + "\n")
    alone = cli.ErrorCollector()
    alone({"diagnosticEvent": {"severity": "error", "urn": fixtures.command_urn("tiny-lab-1-install"),
                               "message": step_error}})
    alone({"diagnosticEvent": {"severity": "error", "message": "update failed"}})
    assert alone.explain(RuntimeError("x")) == block
    # The rollback's report (components/steps/rollback.py) quotes the block: shown there, whole, once.
    report = Rollback(connections={}, run_line=lambda *a, **k: ("", "")).roll_back("tiny-lab-1-install", step_error, [])
    assert condense(report) == [ln for ln in report.splitlines() if ln.strip()]
    both = cli.ErrorCollector()
    for message in (step_error, report):
        both({"diagnosticEvent": {"severity": "error", "message": message}})
    text = both.explain(RuntimeError("x"))
    assert text.count("FAILED: Install and start bws-tiny.service on lab-1") == 1, text
    assert "`up` failed at step tiny-lab-1-install:" in text and "running" not in text
