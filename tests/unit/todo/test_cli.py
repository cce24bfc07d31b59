"""The command end to end without the engine (--events replays a recorded preview), and the
SDK-event → wire-dict conversion the live path relies on."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest
from pulumi.automation import events as sdk_events

from components.todo import __main__ as cli
from components.todo.engine import slim_events, slim_plan, wire
from components.todo.plan import build_items, step_metadata

from . import fixtures
from .conftest import DATA
from .test_views import SCHEMA


@pytest.fixture
def recorded(tmp_path):
    (tmp_path / "stacks").mkdir()
    shutil.copy(DATA / "Pulumi.lab.yaml", tmp_path / "stacks" / "Pulumi.lab.yaml")
    (tmp_path / "events.json").write_text(json.dumps(fixtures.first_preview_events()))
    (tmp_path / "plan.json").write_text(json.dumps(fixtures.plan()))
    return tmp_path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_json_from_a_recorded_preview_is_valid(recorded, capsys):
    code, out, _ = run(capsys, "--stack", "lab", "--work-dir", str(recorded), "--events", str(recorded / "events.json"),
                       "--plan", str(recorded / "plan.json"), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert len(doc) == 12 and doc[-1]["priority"] == "normal"


def test_cli_text_names_nodes_from_the_stack_config(recorded, capsys):
    code, out, _ = run(capsys, "--stack", "lab", "--work-dir", str(recorded), "--events", str(recorded / "events.json"),
                       "--plan", str(recorded / "plan.json"))
    assert code == 0
    assert "\nlab-1\n" in out and "\nlab-2\n" in out and "198.18.0.11" not in out


def test_cli_mermaid_without_a_plan_has_no_edges(recorded, capsys):
    code, out, _ = run(capsys, "--stack", "lab", "--work-dir", str(recorded), "--events", str(recorded / "events.json"),
                       "--format", "mermaid")
    assert code == 0 and "graph TD" in out and "-->" not in out


def test_cli_refuses_up_on_a_recording(recorded, capsys):
    code, _, err = run(capsys, "--stack", "lab", "--work-dir", str(recorded), "--events", str(recorded / "events.json"),
                       "--up")
    assert code == 2 and "cannot replay" in err


def test_cli_without_the_engine_says_how_to_get_it(recorded, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(recorded))
    code, _, err = run(capsys, "--stack", "lab", "--work-dir", str(recorded))
    assert code == 1 and "scripts/install-engine.sh" in err


def test_cli_reports_a_bad_stack_config_in_one_message(recorded, capsys):
    bad = recorded / "stacks" / "Pulumi.lab.yaml"
    bad.write_text(bad.read_text().replace("tensor_parallel: 2", "tensor_parallel: 3"))
    code, _, err = run(capsys, "--stack", "lab", "--work-dir", str(recorded), "--events", str(recorded / "events.json"))
    assert code == 1 and "blackwell-serving:deployments[0]" in err and "Traceback" not in err


def test_sdk_events_convert_back_to_the_wire_shape():
    raw = fixtures.first_preview_events({"tiny-fetch": "update", "vllm-lab-build": "replace"})
    converted = [wire(sdk_events.EngineEvent.from_json(e)) for e in raw]
    a = build_items(step_metadata(raw), fixtures.plan(), None)
    b = build_items(step_metadata(converted), fixtures.plan(), None)
    assert [x.full() for x in a] == [y.full() for y in b]
    md = converted[-2]["resourcePreEvent"]["metadata"]
    assert set(md) >= {"op", "urn", "type", "new"} and md["new"]["inputs"]["connection"]["host"] == "198.18.0.11"
    d = wire(sdk_events.EngineEvent.from_json(
        {"sequence": 1, "timestamp": 2, "diagnosticEvent": {"message": "m", "color": "never", "severity": "info#err",
                                                            "urn": "u"}}))
    assert d["diagnosticEvent"] == {"message": "m", "color": "never", "severity": "info#err", "urn": "u"}
    failed = wire(sdk_events.EngineEvent.from_json(
        {"resOpFailedEvent": {"metadata": {"op": "create", "urn": "u", "type": "t", "provider": ""}, "status": 1, "steps": 1}}))
    assert failed["resOpFailedEvent"]["metadata"]["urn"] == "u"


def test_recordings_keep_what_the_list_needs_and_drop_the_rest():
    events, plan = fixtures.first_preview_events(), fixtures.plan()
    plan["resourcePlans"][fixtures.command_urn("tiny-fetch")]["goal"]["inputDiff"] = {"adds": {"stdin": "ciphertext"}}
    slim_e, slim_p = slim_events(events), slim_plan(plan)
    assert "ciphertext" not in json.dumps(slim_p)
    assert all("resourcePreEvent" in e for e in slim_e)
    full = [x.full() for x in build_items(step_metadata(events), plan, None)]
    assert [x.full() for x in build_items(step_metadata(slim_e), slim_p, None)] == full


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
