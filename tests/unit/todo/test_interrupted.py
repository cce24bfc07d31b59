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
        {"type": "updating", "resource": {"urn": held}},    # the resource is there: settled
        {"type": "deleting", "resource": {"urn": gone}},    # deleted since: settled
        {"type": "deleting", "resource": {"urn": held}},    # still there: stays
        {"type": "importing", "resource": {"urn": held}},   # not ours to judge: stays
    ]}
    kept, dropped = settled(deployment)
    assert [(o["type"], o["resource"]["urn"]) for o in kept["pending_operations"]] == [("creating", gone), ("deleting", held),
                                                                  ("importing", held)]
    assert len(dropped) == 3
    assert kept["resources"] == deployment["resources"]


def test_with_an_unfinished_operation_the_state_is_left_alone(tmp_path, monkeypatch):
    """`pulumi stack import` removes every pending operation, so the state is imported only when
    all of them are settled (the CLI faked: it prints an export and records an import)."""
    from components.todo.interrupted import drop_settled_operations
    held, gone = "urn:pulumi:lab::p::t::held", "urn:pulumi:lab::p::t::gone"
    state = {"version": 3, "deployment": {"resources": [{"urn": held}], "pending_operations": [
        {"type": "creating", "resource": {"urn": held}}, {"type": "creating", "resource": {"urn": gone}}]}}
    (tmp_path / "export.json").write_text(json.dumps(state))
    fake = tmp_path / "pulumi"
    fake.write_text(f'#!/bin/bash\ncase "$2" in export) cat {tmp_path}/export.json;; import) touch {tmp_path}/imported;; esac\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    [message] = drop_settled_operations("lab")
    assert "left 2 pending operations of stack lab as they are: 1 of them are not finished yet" in message
    assert not (tmp_path / "imported").exists()
    state["deployment"]["pending_operations"].pop()
    (tmp_path / "export.json").write_text(json.dumps(state))
    [message] = drop_settled_operations("lab")
    assert message.startswith("dropped the pending operation of held (creating, interrupted)")
    assert (tmp_path / "imported").exists()
