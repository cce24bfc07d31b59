"""A step's command line (components/remote.command_line), run by real bash as a node's login
shell runs it (`$SHELL -c LINE`, the scripts and the data on stdin): the right script runs with
its own data, it is bounded by its timeout, and a second run of the same step waits for the
first instead of racing it."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid

from components.operator import reaper
from components.steps.remote import command_line, read_script
from tests.wait import wait_until

CREATE = 'set -eu\nprintf "create got: %s\\n" "$(cat)"\n'
DELETE = 'echo "delete ran"\n'


def line(which: int, scripts=(CREATE, DELETE), timeout_s: int = 20, lock: str | None = None) -> str:
    return command_line(label="t on n", lock=lock or f"test-{uuid.uuid4().hex}", scripts=list(scripts),
                        which=which, timeout_s=timeout_s)


def run(cmd: str, stdin: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd], input=stdin, capture_output=True, text=True, timeout=60, **kw)


def test_create_runs_its_script_with_the_data_after_the_scripts():
    done = run(line(0), CREATE + DELETE + "HF_TOKEN=secret\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "create got: HF_TOKEN=secret\n"


def test_delete_skips_the_create_script():
    done = run(line(1), CREATE + DELETE)
    assert (done.returncode, done.stdout) == (0, "delete ran\n")


def test_the_script_is_read_back_from_its_line_and_stdin():
    assert read_script(line(1), CREATE + DELETE + "data") == DELETE
    assert read_script(line(0), CREATE + DELETE + "data") == CREATE


def test_a_script_that_overruns_is_ended_by_its_timeout():
    done = run(line(0, scripts=["sleep 30\n"], timeout_s=1), "sleep 30\n")
    assert done.returncode == 124   # timeout's own status: it ended the script


def test_a_second_run_of_the_same_step_waits_for_the_first():
    lock = f"test-{uuid.uuid4().hex}"
    slow = 'sleep 2; echo first\n'
    first = subprocess.Popen(["bash", "-c", line(0, scripts=[slow], lock=lock)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first.stdin.write(slow)
    first.stdin.close()
    # The first holds the step's lock once its script runs (its `sleep`).
    wait_until(lambda: "sleep" in {reaper._name(p) for p in reaper.descendants(first.pid, exclude=-1)}, 10,
               "the first run's script running", every_s=0.05)
    quick = 'echo second\n'
    second = run(line(0, scripts=[quick], lock=lock), quick)
    assert first.wait(timeout=30) == 0 and first.stdout.read() == "first\n"
    assert second.returncode == 0 and second.stdout == "second\n"
    assert "waiting for an earlier run of this step on the node to end" in second.stderr
    # By the time the second one ran, the first had finished.
    assert first.returncode is not None


def test_other_steps_do_not_wait():
    slow = 'sleep 60\n'
    first = subprocess.Popen(["bash", "-c", line(0, scripts=[slow])], stdin=subprocess.PIPE, text=True,
                             start_new_session=True)
    first.stdin.write(slow)
    first.stdin.close()
    try:
        done = run(line(0, scripts=["echo other\n"]), "echo other\n")
        # the other step ran to its end while the first still held its own lock
        assert done.stdout == "other\n" and first.poll() is None
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
