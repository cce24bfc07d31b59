"""components/operator/reaper.py on real processes: a stand-in for the CLI with children and a
grandchild, killed with SIGKILL; the watcher ends what it left, and only that."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from components.operator import reaper
from tests.wait import wait_for_rounds

# A "CLI" that starts a child (which starts its own child) and sleeps; prints the child's PID.
TREE = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import subprocess, time; subprocess.Popen(['sleep', '300']); time.sleep(300)"])
print(child.pid, flush=True)
time.sleep(300)
"""


def alive(pid: int) -> bool:
    return reaper._stat(pid) is not None  # zombies count as gone


def wait_until(predicate, timeout_s: float = 20) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_a_killed_cli_takes_its_process_tree_with_it():
    cli = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    bystander = subprocess.Popen(["sleep", "300"])  # not below the CLI: left alone
    try:
        child = int(cli.stdout.readline())
        assert wait_until(lambda: any(reaper.descendants(child, exclude=-1)))
        below = reaper.descendants(cli.pid, exclude=-1)
        assert child in below and len(below) == 2
        watcher = subprocess.Popen([sys.executable, "-m", "components.operator.reaper",
                                    f"{cli.pid}:{reaper._stat(cli.pid)[1]}"])
        # One whole look at least: the tree is noted while the CLI lives.
        wait_for_rounds(watcher.pid, 1, 20, "the watcher looking at the CLI's tree")
        assert watcher.poll() is None
        cli.kill()  # not reaped yet: a zombie is a dead CLI too
        assert watcher.wait(timeout=20) == 0
        assert wait_until(lambda: not any(alive(p) for p in below)), below
        assert alive(bystander.pid)
    finally:
        for p in (cli, bystander):
            p.kill()
            p.wait()


def test_end_never_signals_a_reused_pid():
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        started = reaper._stat(sleeper.pid)[1]
        assert reaper.end({sleeper.pid: started + 1}, grace_s=0.1) == []  # another start time
        assert alive(sleeper.pid)
        assert reaper.end({sleeper.pid: started}, grace_s=5) == [sleeper.pid]
        assert sleeper.wait(timeout=10) == -signal.SIGTERM
    finally:
        sleeper.kill()
        sleeper.wait()


def test_survivors_are_the_noted_processes_still_alive():
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        noted = {sleeper.pid: reaper._stat(sleeper.pid)[1]}
        assert reaper.survivors(noted, within_s=0.2) == {sleeper.pid: "sleep"}
        assert reaper.survivors({sleeper.pid: noted[sleeper.pid] + 1}, within_s=0) == {}  # a reused PID
        sleeper.kill()
        sleeper.wait()
        assert reaper.survivors(noted, within_s=5) == {}
    finally:
        sleeper.kill()
        sleeper.wait()


def test_no_watcher_outside_a_pulumi_cli():
    assert reaper.cli_ancestor(os.getpid()) is None  # pytest is not run by a `pulumi` CLI
