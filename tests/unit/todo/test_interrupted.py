"""What an interrupted run left: the file backend's lock of a killed `pulumi up`, and the
operations it had not finished."""

from __future__ import annotations

import json
import subprocess

from components.todo.interrupted import clear_stale_locks, lock_files, pending_operations

from . import fixtures


def write_lock(backend, pid: int, host: str = "here", name: str = "a1") -> object:
    d = backend / ".pulumi" / "locks" / "organization" / "blackwell-serving" / "lab"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.json"
    path.write_text(json.dumps({"pid": pid, "username": "root", "hostname": host,
                                "timestamp": "2026-12-03T07:00:00Z"}))
    return path


def _reaped() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_lock_of_a_process_that_is_gone_is_cleared(tmp_path):
    path = write_lock(tmp_path, _reaped())
    [message] = clear_stale_locks(f"file://{tmp_path}", "blackwell-serving", "lab", host="here")
    assert "cleared the lock of stack lab" in message
    assert not path.exists()


def test_a_lock_of_a_live_process_is_kept_and_told_with_the_command(tmp_path):
    proc = subprocess.Popen(["sleep", "30"])
    try:
        path = write_lock(tmp_path, proc.pid)
        [message] = clear_stale_locks(f"file://{tmp_path}", "blackwell-serving", "lab", host="here")
        assert f"being changed by pid {proc.pid}" in message and "pulumi cancel --stack lab --yes" in message
        assert path.exists()
    finally:
        proc.kill()


def test_a_lock_taken_on_another_machine_is_never_cleared(tmp_path):
    path = write_lock(tmp_path, _reaped(), host="laptop")
    [message] = clear_stale_locks(f"file://{tmp_path}", "blackwell-serving", "lab", host="here")
    assert "locked by a run on laptop" in message and path.exists()


def test_other_stacks_and_backends_are_not_touched(tmp_path):
    write_lock(tmp_path, _reaped())
    assert clear_stale_locks(f"file://{tmp_path}", "blackwell-serving", "spark-duo", host="here") == []
    assert lock_files("s3://bucket", "blackwell-serving", "lab") == []


def test_pending_operations_are_told_in_the_todo_lists_words():
    deployment = fixtures.previous_deployment(["vllm-lab-sync-lab-2"])
    deployment["pending_operations"] = [{"type": "creating",
                                         "resource": {"urn": fixtures.command_urn("vllm-lab-sync-lab-2")}},
                                        {"type": "updating", "resource": {"urn": "urn:x::y::z::other"}}]
    assert pending_operations(deployment) == ["Copy image vllm-lab to lab-2 over the fabric (creating, interrupted)",
                                              "other (updating, interrupted)"]
    assert pending_operations({}) == []


def test_pending_operations_a_later_run_finished_are_settled_and_the_rest_stay():
    from components.todo.interrupted import settled
    held, gone = "urn:pulumi:lab::p::t::held", "urn:pulumi:lab::p::t::gone"
    deployment = {"resources": [{"urn": held}], "pending_operations": [
        {"type": "creating", "resource": {"urn": held}},    # created since: settled
        {"type": "creating", "resource": {"urn": gone}},    # never finished: stays
        # The engine drops pending updates and deletes when an `up` writes its state: one still
        # there was not finished by a later run, whatever the state holds.
        {"type": "updating", "resource": {"urn": held}},
        {"type": "deleting", "resource": {"urn": held}},
        {"type": "importing", "resource": {"urn": held}},   # not ours to judge: stays
    ]}
    kept, dropped = settled(deployment)
    assert [(o["type"], o["resource"]["urn"]) for o in kept["pending_operations"]] == [
        ("creating", gone), ("updating", held), ("deleting", held), ("importing", held)]
    assert len(dropped) == 1
    assert kept["resources"] == deployment["resources"]


def fake_cli(tmp_path, monkeypatch, state: dict) -> Path:
    """A stand-in `pulumi`: `stack export` prints `state`, `stack import --file F` copies F."""
    (tmp_path / "export.json").write_text(json.dumps(state))
    fake = tmp_path / "pulumi"
    fake.write_text(f'#!/bin/bash\ncase "$2" in export) cat {tmp_path}/export.json;; '
                    f'import) cp "$6" {tmp_path}/imported.json;; esac\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    return tmp_path / "imported.json"


STEP = "command:remote:Command"


def test_our_unfinished_steps_are_resumed_in_one_line_and_finished_ones_dropped(tmp_path, monkeypatch):
    """Every pending operation of a step of ours comes out of the state (`pulumi stack import`
    removes them all), so that the `up` after it does not warn of them: one line names what it
    resumes and why nothing needs repair by hand; a create a later run finished is dropped."""
    from components.todo.interrupted import resume_interrupted
    held, gone = "urn:pulumi:lab::p::t::held", "urn:pulumi:lab::p::t::gone"
    state = {"version": 3, "deployment": {"resources": [{"urn": held}], "pending_operations": [
        {"type": "creating", "resource": {"urn": held, "type": STEP}},
        {"type": "creating", "resource": {"urn": gone, "type": STEP}},
        {"type": "updating", "resource": {"urn": held, "type": STEP}}]}}
    imported = fake_cli(tmp_path, monkeypatch, state)
    dropped, resumed = resume_interrupted("lab")
    assert dropped == "dropped the pending operation of held (creating, interrupted): a later run finished it"
    assert resumed.startswith("resuming 2 steps a killed run left unfinished: gone (creating, interrupted); "
                              "held (updating, interrupted). Each runs again from its start and converges")
    assert resumed.endswith("nothing to repair by hand") and "\n" not in resumed
    assert json.loads(imported.read_text())["deployment"] == {"resources": [{"urn": held}], "pending_operations": []}


def test_an_operation_not_of_our_steps_leaves_the_state_alone(tmp_path, monkeypatch):
    from components.todo.interrupted import resume_interrupted
    state = {"version": 3, "deployment": {"resources": [], "pending_operations": [
        {"type": "creating", "resource": {"urn": "urn:pulumi:lab::p::command:remote:Command::a", "type": STEP}},
        {"type": "creating", "resource": {"urn": "urn:pulumi:lab::p::aws:s3/bucket:Bucket::b",
                                          "type": "aws:s3/bucket:Bucket"}}]}}
    imported = fake_cli(tmp_path, monkeypatch, state)
    [message] = resume_interrupted("lab")
    assert message.startswith("left 2 pending operations of stack lab as they are: 1 of them are not steps of "
                              "this project (b (creating, interrupted))")
    assert not imported.exists()


def test_nothing_pending_nothing_said_nor_imported(tmp_path, monkeypatch):
    from components.todo.interrupted import resume_interrupted
    imported = fake_cli(tmp_path, monkeypatch, {"version": 3, "deployment": {"resources": []}})
    assert resume_interrupted("lab") == []
    assert not imported.exists()
