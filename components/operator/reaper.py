"""Nothing of a killed run outlives it on the operator's machine.

When the `pulumi` CLI is killed outright (SIGKILL, an out-of-memory kill, a closed SSH session to
the operator's box), the processes it started are not told: its language host and its providers
(pulumi-resource-command, which holds the SSH sessions to the nodes) were measured running on for
minutes, and the program itself exits. So the program starts one small watcher per run, in its
own session: while the CLI lives, the watcher notes every process below it (with each one's start
time, so a reused PID is never taken for it); once the CLI is gone, it ends those still running
(SIGTERM, then SIGKILL after a grace) and exits. Under `python -m components.todo` the same holds
one level up: that process killed, the CLI it started is ended too. After a run that ended normally there is nothing
left to end, and the watcher exits within a second of the CLI.

Work a killed run left on a node is not this module's: a step's remote script ends with its SSH
session or waits for the per-step lock of the next run (templates/scripts/_prelude.sh.j2).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

CLI_NAME = "pulumi"
POLL_S = 0.5
GRACE_S = 5.0


class Proc(NamedTuple):
    ppid: int
    started: int  # clock ticks since boot: with the PID, names one process for good
    pgrp: int


def _stat(pid: int) -> Proc | None:
    """A live process's parent, start time and process group; None when there is none or it is
    a zombie (dead, not yet reaped by its parent: a killed CLI can be one for a while)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after its end.
    fields = raw[raw.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):
        return None
    return Proc(int(fields[1]), int(fields[19]), int(fields[2]))


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def cli_ancestor(pid: int | None = None, levels: int = 4) -> int | None:
    """The `pulumi` CLI above this process (program <- language host <- CLI), None outside one."""
    pid = os.getppid() if pid is None else pid
    for _ in range(levels):
        if pid <= 1:
            return None
        if _name(pid) == CLI_NAME:
            return pid
        stat = _stat(pid)
        if stat is None:
            return None
        pid = stat.ppid
    return None


def _table() -> dict[int, Proc]:
    table = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (proc := _stat(int(entry.name))) is not None:
            table[int(entry.name)] = proc
    return table


def descendants(*roots: int, exclude: int, table: dict[int, Proc] | None = None) -> dict[int, int]:
    """{PID: start time} of every live process below the roots, without `exclude` (the watcher)."""
    children: dict[int, list[int]] = {}
    table = _table() if table is None else table
    for pid, proc in table.items():
        children.setdefault(proc.ppid, []).append(pid)
    found: dict[int, int] = {}
    todo = list(roots)
    while todo:
        for pid in children.get(todo.pop(), []):
            if pid != exclude and pid not in found:
                found[pid] = table[pid].started
                todo.append(pid)
    return found


def strays(groups: set[int], since: int, exclude: int, table: dict[int, Proc]) -> dict[int, int]:
    """Orphans (adopted by init) in the run's process groups, started after the run began: the
    children of a step whose shell the provider killed between two looks."""
    return {pid: p.started for pid, p in table.items()
            if p.ppid == 1 and p.pgrp in groups and p.started >= since and pid != exclude}


def _alive(pid: int, started: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat.started == started


def survivors(processes: dict[int, int], within_s: float) -> dict[int, str]:
    """Those of `processes` (from `descendants`) still alive after waiting up to `within_s`:
    PID -> name. What a killed run must not leave behind."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and any(_alive(p, s) for p, s in processes.items()):
        time.sleep(0.2)
    return {p: _name(p) for p, s in processes.items() if _alive(p, s)}


def end(processes: dict[int, int], grace_s: float = GRACE_S) -> list[int]:
    """SIGTERM to each process still the one noted, SIGKILL to those alive after the grace.
    Returns the PIDs that were signalled."""
    signalled = []
    for pid, started in processes.items():
        if _alive(pid, started):
            try:
                os.kill(pid, signal.SIGTERM)
                signalled.append(pid)
            except OSError:
                pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(p, processes[p]) for p in signalled):
        time.sleep(0.1)
    for pid in signalled:
        if _alive(pid, processes[pid]):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    return signalled


def watch(anchors: list[tuple[int, int]], poll_s: float = POLL_S, grace_s: float = GRACE_S) -> list[int]:
    """Note the process tree of the outermost anchor until any anchor is gone, then end what is
    left of it. Anchors are (PID, start time): the CLI, and our own launcher above it if any."""
    me = os.getpid()
    noted: dict[int, int] = {}
    groups: set[int] = set()
    while all(_alive(pid, started) for pid, started in anchors):
        table = _table()
        below = descendants(anchors[-1][0], exclude=me, table=table)
        noted.update(below)
        groups.update(table[pid].pgrp for pid in below)
        time.sleep(poll_s)
    # What started since the last look: still below a survivor, or orphaned in the run's groups.
    table = _table()
    survivors = [pid for pid, started in noted.items() if _alive(pid, started)]
    noted.update(descendants(*survivors, exclude=me, table=table))
    noted.update(strays(groups, min(started for _, started in anchors), me, table))
    return end(noted, grace_s)


def _launched_by_us(pid: int) -> bool:
    """`python -m components.todo ...` (the Automation API front end) runs the CLI as a child:
    when that process is killed, the CLI it started is part of the interrupted run too."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"components.todo" in argv


def start() -> None:
    """Start the watcher for the CLI running this program; nothing outside a `pulumi` CLI."""
    cli = cli_ancestor()
    stat = _stat(cli) if cli else None
    if stat is None:
        return
    anchors = [(cli, stat.started)]
    launcher = _stat(stat.ppid)
    if launcher is not None and _launched_by_us(stat.ppid):
        anchors.append((stat.ppid, launcher.started))
    # Its own session and no inherited pipes: the language host must not wait for it, and a
    # Ctrl-C of the operator's terminal reaches the CLI (which shuts down its plugins itself).
    subprocess.Popen([sys.executable, "-m", "components.operator.reaper", *(f"{p}:{s}" for p, s in anchors)],
                     cwd=Path(__file__).resolve().parents[2], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     close_fds=True)


if __name__ == "__main__":
    watch([tuple(int(n) for n in arg.split(":")) for arg in sys.argv[1:]])
