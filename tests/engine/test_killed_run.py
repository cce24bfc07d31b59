"""A `pulumi up` killed with SIGKILL mid-step, on the real engine: the language host, the
provider and the step's own process (a local command, so the test needs no node) are gone
within seconds, not minutes (components/operator/reaper.py, started by the program); and the operator's
next run resumes the step, says so in one line, and shows none of Pulumi's advice for resources
in an unknown state (components/todo/interrupted.py)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.operator import reaper
from tests.engine.conftest import engine_env, pulumi
from tests.wait import wait_for_rounds

# The project's program replaced by one slow step; it starts the watcher as __main__.py does.
PROGRAM = """
import pulumi_command as command
from components.operator import reaper
reaper.start()
command.local.Command("slow", create="sleep 240")
"""


def watchers(processes) -> list[int]:
    """The run's watchers (python -m components.operator.reaper) among `processes` (those gone since
    are none of them)."""
    found = []
    for pid in processes:
        try:
            if b"components.operator.reaper" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            pass
    return found


def test_nothing_of_a_killed_up_outlives_it(project):
    (project / "__main__.py").write_text(PROGRAM)
    assert pulumi(project, "stack", "init", "killed").returncode == 0
    cli = subprocess.Popen(["pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "--stack", "killed"],
                           cwd=project, env=engine_env(project), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        below: dict[int, int] = {}
        deadline = time.monotonic() + 120
        names = set()
        while time.monotonic() < deadline and "sleep" not in names:  # the step is running
            below = reaper.descendants(cli.pid, exclude=-1)
            names = {reaper._name(p) for p in below}
            time.sleep(0.5)
        assert "sleep" in names, names
        assert {"pulumi-language", "pulumi-resource"} <= names, names  # comm: 15 characters
        found = watchers(below)
        assert len(found) == 1, found
        left = {p: s for p, s in below.items() if p not in found}
        cli.send_signal(signal.SIGKILL)
        cli.wait()
        still = reaper.survivors(left, within_s=20)
        assert still == {}, f"outlived the killed CLI: {still}"
    finally:
        cli.kill()
        cli.wait()
        reaper.end(reaper.descendants(os.getpid(), exclude=os.getpid()), grace_s=1)


# One step that a first run starts and is killed in (it waits), and that a second run finishes.
RESUMED_PROGRAM = """
import pulumi_command as command
from components.operator import reaper
reaper.start()
command.local.Command("slow-step", create="if [ -e {started} ]; then echo done; else touch {started}; sleep 240; fi")
"""
# Pulumi's own words when the state holds pending operations (its deployment executor): advice
# that does not apply to a step of ours, which the next run redoes by itself.
PULUMI_ADVICE = ("unknown state", "pulumi refresh", "pending operations from previous deployment")


def kill_while_running(project, stack: str, started) -> None:
    """`pulumi up` of `stack`, SIGKILLed once its step has started; its processes reaped."""
    cli = subprocess.Popen(["pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "--stack", stack],
                           cwd=project, env=engine_env(project), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    below: dict[int, int] = {}
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not started.exists():
            assert cli.poll() is None, f"the up ended (exit {cli.returncode}) before its step started"
            time.sleep(0.5)
        assert started.exists(), "the step did not start"
        found = watchers(reaper.descendants(cli.pid, exclude=-1))
        assert len(found) == 1, found
        # The run's watcher has noted the step's processes: a whole look of it since they started.
        wait_for_rounds(found[0], 1, 30, "the run's watcher looking at the running step")
        below = reaper.descendants(cli.pid, exclude=-1)
        cli.send_signal(signal.SIGKILL)
        cli.wait()
        assert reaper.survivors(below, within_s=30) == {}
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        reaper.end(below, grace_s=1)


def state_of(project, stack: str) -> dict:
    exported = pulumi(project, "stack", "export", "--stack", stack)
    assert exported.returncode == 0, exported.stderr
    return json.loads(exported.stdout)["deployment"]


@pytest.mark.parametrize("entry", ["plain-up", "run-lab", "todo-up"])
def test_a_resumed_run_says_what_it_resumes_and_no_advice_that_does_not_apply(project, tmp_path, entry):
    """After a killed `up`, the operator's next run — scripts/run-lab.sh's two commands
    (`python -m components.todo.interrupted`, then `pulumi up`), or `python -m components.todo
    --up` — prints one line of ours naming the step it resumes, and none of Pulumi's advice about
    resources in an unknown state; the step runs again and converges, and no pending operation is
    left in the state. A plain `pulumi up` instead shows the advice, and keeps the pending create
    in the state for ever (what the other two spare the operator). (The stack is named after a
    shipped stack file so that the todo list can read its config; the program is the one slow
    step.)"""
    stack = "spark-duo"
    started = tmp_path / "started"
    (project / "__main__.py").write_text(RESUMED_PROGRAM.format(started=shlex.quote(str(started))))
    assert pulumi(project, "stack", "init", stack).returncode == 0
    kill_while_running(project, stack, started)
    assert [op["type"] for op in state_of(project, stack)["pending_operations"]] == ["creating"]

    env = engine_env(project)
    if entry == "plain-up":
        assert pulumi(project, "cancel", "--yes", "--stack", stack).returncode == 0   # the killed run's lock
        up = pulumi(project, "up", "--yes", "--skip-preview", "--stack", stack)
        assert up.returncode == 0, up.stdout[-4000:] + up.stderr[-2000:]
        assert all(words in up.stdout + up.stderr for words in PULUMI_ADVICE), up.stdout[-4000:]
        assert [op["type"] for op in state_of(project, stack)["pending_operations"]] == ["creating"]
        return
    if entry == "run-lab":
        note = subprocess.run([sys.executable, "-m", "components.todo.interrupted", "--stack", stack],
                              cwd=project, env=env, capture_output=True, text=True, timeout=300)
        up = pulumi(project, "up", "--yes", "--skip-preview", "--stack", stack)
        said, up_said = note.stdout + note.stderr, up.stdout + up.stderr
    else:
        up = subprocess.run([sys.executable, "-m", "components.todo", "--up", "--stack", stack,
                             "--work-dir", str(project)], cwd=project, env=env, capture_output=True, text=True,
                            timeout=600)
        said = up_said = up.stdout + up.stderr
    assert up.returncode == 0, up_said[-4000:]
    resumed = [line for line in said.splitlines() if "resuming" in line]
    assert len(resumed) == 1, said[-3000:]
    assert resumed[0].startswith("note: resuming 1 step a killed run left unfinished: slow-step (creating, "
                                 "interrupted). Each runs again from its start and converges")
    for words in PULUMI_ADVICE:
        assert words not in up_said, up_said[-4000:]
    state = state_of(project, stack)
    assert not state.get("pending_operations")
    assert [r["outputs"]["stdout"] for r in state["resources"] if r["type"] == "command:local:Command"] == ["done"]
