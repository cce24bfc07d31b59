"""The rank watch's script (templates/scripts/rank-watch.sh.j2) run for real with bash on this
machine: `systemctl` a stand-in answering from files, /proc a tree the test writes (the rank's
process, its socket descriptors, its TCP table), and the head a real listening socket on loopback.
It checks how the watch tells a rank to leave waiting from one to restart: a rank that joined and
lost its head, and a start that never joined a head that listens for it (a rank restarted just
before its head), restart after `failures` checks; a young start, or one whose head does not
listen yet, waits. What it cannot check here: vLLM's ranks themselves (tests/lab/test_lab_e2e.py
and test_lab_repair.py do)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from email.utils import formatdate
from pathlib import Path

import pytest

from components import names
from components.steps.render import render
from tests.tools import require

ENGINE = "bws-d.service"
PID = 4242
SOCKET_INODE = 777
GRACE_S = 90
TAG = "[blackwell rank watch d-rank1]"

SYSTEMCTL = """#!/bin/sh
case "$1" in
  is-active) true ;;
  show) cat "$FAKE/$3" ;;
  restart) echo "$2" >> "$FAKE/restarted" ;;
esac
"""


@pytest.fixture
def head():
    """The head's rendezvous port, listening on loopback (closed: the port of a socket closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.fixture
def watch(tmp_path: Path, head: int):
    proc, fake, bin_dir = tmp_path / "proc", tmp_path / "fake", tmp_path / "bin"
    for d in (proc / str(PID) / "fd", proc / str(PID) / "net", fake, bin_dir):
        d.mkdir(parents=True)
    (proc / str(PID) / "cgroup").write_text("0::/system.slice/bws-d.service\n")
    os.symlink(f"socket:[{SOCKET_INODE}]", proc / str(PID) / "fd" / "5")
    (bin_dir / "systemctl").write_text(SYSTEMCTL)
    (bin_dir / "systemctl").chmod(0o755)
    (fake / "MainPID").write_text(f"{PID}\n")

    def script(port: int) -> Path:
        text = render("scripts/rank-watch.sh.j2", deployment="d-rank1", engine_unit=ENGINE, container=None,
                      head_address="127.0.0.1", head_port=port, join_grace_s=GRACE_S, failures=2)
        path = tmp_path / f"watch-{port}.sh"
        path.write_text(text.replace("/proc/", f"{proc}/").replace(names.WATCHDOG_RUN_DIR, str(tmp_path / "run")))
        return path

    def rank(invocation: str, age_s: int, linked: bool) -> None:
        """This start of the rank: its InvocationID, its age, and whether it holds a connection to the head."""
        (fake / "InvocationID").write_text(invocation + "\n")
        (fake / "ActiveEnterTimestamp").write_text(formatdate(time.time() - age_s, usegmt=True) + "\n")
        row = (f"   0: 0100007F:D431 0100007F:{head:04X} 01 00000000:00000000 00:00000000 00000000     0        0 "
               f"{SOCKET_INODE} 1 0000000000000000 20 4 30 10 -1")
        header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
        (proc / str(PID) / "net" / "tcp").write_text(header + "\n" + (row + "\n" if linked else ""))

    def tick(port: int = head) -> list[str]:
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE": str(fake)}
        done = subprocess.run([require("bash"), str(script(port))], env=env, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        return [line.removeprefix(TAG).strip() for line in done.stderr.splitlines() if line.startswith(TAG)]

    def restarts() -> int:
        path = fake / "restarted"
        return len(path.read_text().split()) if path.exists() else 0

    return rank, tick, restarts


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_rank_that_joined_and_lost_its_head_restarts_after_the_failures(watch):
    rank, tick, restarts = watch
    rank("run-1", age_s=600, linked=True)
    assert tick() == []
    rank("run-1", age_s=610, linked=False)
    said = tick()
    assert "1 of 2" in said[0] and "the head restarted without this rank" in said[0], said
    assert restarts() == 0
    tick()
    assert restarts() == 1


def test_a_start_that_never_joined_a_listening_head_restarts_once_past_its_grace(watch):
    rank, tick, restarts = watch
    # Young: its imports are not done; however long the head has listened, it waits.
    rank("run-2", age_s=GRACE_S - 30, linked=False)
    assert "yet; waiting" in tick()[0] and "yet; waiting" in tick()[0]
    assert restarts() == 0
    # Past its grace, but its head does not listen (down, or loading before its rendezvous): waits.
    rank("run-2", age_s=GRACE_S + 60, linked=False)
    assert "yet; waiting" in tick(closed_port())[0]
    assert "yet; waiting" in tick(closed_port())[0]
    assert restarts() == 0
    # Past its grace, and its head listens for it: it joined a head that is gone.
    said = tick()
    assert "1 of 2" in said[0] and "never held one" in said[0], said
    tick()
    assert restarts() == 1


def test_a_wait_in_between_starts_the_count_again(watch):
    rank, tick, restarts = watch
    rank("run-3", age_s=GRACE_S + 60, linked=False)
    tick()
    tick(closed_port())   # the head went down again: back to waiting, the count forgotten
    tick()
    assert restarts() == 0
    tick()
    assert restarts() == 1
