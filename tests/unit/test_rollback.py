"""components/steps/rollback.py: what a failed `up` undoes, in which order, and what it says — with the
transport replaced (the lab test test_lab_rollback.py runs it on real nodes)."""

import asyncio
from dataclasses import replace

import pytest
from pulumi.resource_hooks import ErrorHookArgs, ResourceHookArgs

from components.steps.remote import command_line, read_script
from components.steps.rollback import Action, Rollback, undo_order
from components.steps.ssh import Connection, RemoteError

CONN = Connection(host="198.18.0.11", user="root", port=22, host_key="ssh-ed25519 AAAA")


class Transport:
    def __init__(self, fail_on: str = ""):
        self.calls: list[tuple[str, str, str]] = []
        self.fail_on = fail_on

    def __call__(self, conn, line, *, stdin="", timeout_s=60, what=""):
        self.calls.append((conn.host, line, stdin))
        if line.startswith("journalctl"):
            return "engine: error: unrecognized arguments: --no-such-flag\n", ""
        if self.fail_on and self.fail_on in stdin:
            raise RemoteError(f"{what} on {conn.host} failed with exit status 1:\nboom")
        return "", ""


def step_inputs(create: str, delete: str, label: str) -> dict:
    scripts = [create, delete]
    return {"create": command_line(label=label, lock=label, scripts=scripts, which=0, timeout_s=60),
            "delete": command_line(label=label, lock=label, scripts=scripts, which=1, timeout_s=60),
            "stdin": "".join(scripts)}


def hook_args(new=None, old=None) -> ResourceHookArgs:
    return ResourceHookArgs(urn="urn:x", id="", name="x", type="command:remote:Command", new_inputs=new, old_inputs=old)


def rollback(transport) -> Rollback:
    return Rollback({"lab-1": CONN, "lab-2": replace(CONN, host="198.18.0.12")}, run_line=transport)


def hooks(rb: Rollback, label: str, node: str, undo: str, unit=None):
    """(before_create, before_update, on_error) of a step, as the engine calls them."""
    create, update = rb.recorders(label, node, undo=undo, undo_sentence=f"undo {label}",
                                  restore_sentence=f"previous {label}", unit=unit)
    return create, update, rb.on_error


def test_undo_order_removes_backwards_then_restores_previous_versions_forwards():
    acts = [Action("n", s, kind, "", "", None) for s, kind in
            [("retire glm", "remove"), ("ray head", "previous"), ("worker", "previous"), ("gate", "check"),
             ("venv", "switch"), ("engine", "remove")]]
    assert [a.sentence for a in undo_order(acts)] == ["engine", "retire glm", "venv", "ray head", "worker", "gate"]


def test_a_failure_undoes_what_started_with_its_own_scripts_and_says_so():
    t = Transport()
    rb = rollback(t)
    retire_create, _, err_hook = hooks(rb, "glm-retire on lab-1", "lab-1", "remove")
    unit_create, unit_update, _ = hooks(rb, "tiny-install on lab-1", "lab-1", "previous", unit="bws-tiny.service")
    retire_create(hook_args(new=step_inputs("RETIRE", "RESTORE-GLM", "glm-retire on lab-1")))
    unit_update(hook_args(new=step_inputs("NEW-UNIT", "REMOVE-UNIT", "tiny-install on lab-1"),
                          old=step_inputs("OLD-UNIT", "REMOVE-UNIT", "tiny-install on lab-1")))

    retry = asyncio.run(err_hook(ErrorHookArgs(urn="urn:gate", id="", name="tiny-health", type="t",
                                               failed_operation="create", errors=["exit status 1: gate failed"])))
    assert retry is False
    undos = [(host, read_script(line, stdin)) for host, line, stdin in t.calls
             if not line.startswith(("journalctl", "touch"))]
    # The glm retirement is undone by its delete script; the unit by its previous create script,
    # after which the node is marked: its unit is the previous text, the state records the new one.
    assert undos == [("198.18.0.11", "RESTORE-GLM"), ("198.18.0.11", "OLD-UNIT")]
    assert t.calls[-1][:2] == ("198.18.0.11", "touch /var/lib/blackwell-serving/units/bws-tiny.service.put-back")
    assert t.calls[0][1].startswith("journalctl") and "-u bws-tiny.service" in t.calls[0][1]
    assert "tiny-health" in rb.report and "gate failed" in rb.report
    assert "unrecognized arguments: --no-such-flag" in rb.report
    assert "undo glm-retire on lab-1" in rb.report and "previous tiny-install on lab-1" in rb.report
    # Steps that had not started are not started any more.
    with pytest.raises(RuntimeError, match="rolling back"):
        unit_create(hook_args(new=step_inputs("A", "B", "tiny-install on lab-1")))
    # A second failure of the same run does not roll back twice.
    calls = len(t.calls)
    asyncio.run(err_hook(ErrorHookArgs(urn="u", id="", name="other", type="t", failed_operation="create")))
    assert len(t.calls) == calls


def test_an_undo_that_fails_is_named_and_the_others_still_run():
    t = Transport(fail_on="RESTORE-GLM")
    rb = rollback(t)
    glm, _, err_hook = hooks(rb, "glm-retire on lab-1", "lab-1", "remove")
    emb, _, _ = hooks(rb, "emb-retire on lab-2", "lab-2", "remove")
    glm(hook_args(new=step_inputs("R1", "RESTORE-GLM", "glm-retire on lab-1")))
    emb(hook_args(new=step_inputs("R2", "RESTORE-EMB", "emb-retire on lab-2")))
    asyncio.run(err_hook(ErrorHookArgs(urn="u", id="", name="x", type="t", failed_operation="create")))
    assert "NOT put back" in rb.report and "boom" in rb.report
    assert any(read_script(line, stdin) == "RESTORE-EMB" for _, line, stdin in t.calls if "head -c" in line)


def test_nothing_started_means_nothing_to_undo_and_updates_of_retirements_are_left_alone():
    t = Transport()
    rb = rollback(t)
    _, retire_update, err_hook = hooks(rb, "glm-retire on lab-1", "lab-1", "remove")
    # A retirement run again (drift) did not start the service: there is nothing to give back.
    retire_update(hook_args(new=step_inputs("R", "S", "l"), old=step_inputs("R0", "S", "l")))
    assert asyncio.run(err_hook(ErrorHookArgs(urn="u", id="", name="x", type="t", failed_operation="create"))) is False
    assert t.calls == [] and rb.report is None


def test_a_health_gate_is_asked_again_for_the_previous_deployment_and_never_removed():
    t = Transport()
    rb = rollback(t)
    unit_create, unit_update, err_hook = hooks(rb, "tiny-lab-1-install on lab-1", "lab-1", "previous",
                                               unit="bws-tiny.service")
    gate_create, gate_update, _ = hooks(rb, "tiny-health on lab-1", "lab-1", "check")
    gate_create(hook_args(new=step_inputs("GATE", "NOOP", "tiny-health on lab-1")))  # a first gate: nothing to ask
    unit_update(hook_args(new=step_inputs("NEW", "RM", "u"), old=step_inputs("OLD-UNIT", "RM", "u")))
    gate_update(hook_args(new=step_inputs("NEW-GATE", "NOOP", "g"), old=step_inputs("OLD-GATE", "NOOP", "g")))
    asyncio.run(err_hook(ErrorHookArgs(urn="u", id="", name="tiny-health", type="t", failed_operation="update")))
    undos = [read_script(line, stdin) for _, line, stdin in t.calls if not line.startswith(("journalctl", "touch"))]
    assert undos == ["OLD-UNIT", "OLD-GATE"]


def test_an_engine_venv_is_switched_back_on_update_and_kept_on_create():
    t = Transport()
    rb = rollback(t)
    create, update, err_hook = hooks(rb, "sglang-venv-box on box", "lab-1", "switch")
    create(hook_args(new=step_inputs("BUILD", "REMOVE-VENVS", "v")))      # a first build is kept
    update(hook_args(new=step_inputs("BUILD-NEW", "REMOVE-VENVS", "v"), old=step_inputs("BUILD-OLD", "REMOVE-VENVS", "v")))
    asyncio.run(err_hook(ErrorHookArgs(urn="u", id="", name="x", type="t", failed_operation="update")))
    assert [read_script(line, stdin) for _, line, stdin in t.calls] == ["BUILD-OLD"]


def test_off_binds_no_hooks():
    rb = Rollback({"lab-1": CONN}, enabled=False)
    assert rb.binding("x on lab-1", "lab-1", undo="remove", undo_sentence="u") is None
