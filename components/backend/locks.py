"""Pulumi's own lock of a stack in a PostgreSQL backend, and which of them a dead run left.

Pulumi's DIY backend stores every file as a row of its table (default pulumi_state): key = the
path a file backend would use, data = {"data": base64 of the file}. A lock is the row
`.pulumi/locks/<org>/<project>/<stack>/<id>.json`, holding {pid, username, hostname, timestamp};
it has no lease, so a killed `pulumi up` leaves it for ever.

Called only while this run holds the stack's guard (guard.py), so no guarded run is alive. A lock
is then a dead run's, and removed, when:
- it was taken on this machine and its pid no longer runs (checked here, as for the file backend);
- it was taken on the host of the last guarded run that died (guard.previous), at or after that
  run began: that run's guard session has ended, and with it the run.
Any other lock (a plain `pulumi` run outside our path, on a machine we cannot look at) is left
alone and named, with the command that clears it: a live run's lock is never taken."""

from __future__ import annotations

import base64
import json
import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from components.backend.guard import Holder
from components.backend.url import table

# Pulumi stamps its lock after our guard's row is written (the CLI starts after it): a second of
# slack covers two clocks read on one host in that order.
_SLACK = timedelta(seconds=1)


def lock_holder_alive(pid: int) -> bool:
    """Whether the process that took a lock on this machine still runs (any backend's lock)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:   # a killed CLI whose parent died too may linger unreaped (a container's pid 1 may not reap)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


@dataclass(frozen=True)
class PulumiLock:
    key: str
    pid: int
    user: str
    host: str
    since: datetime

    def who(self) -> str:
        return f"{self.user}@{self.host} (pid {self.pid}) since {self.since.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def parse_time(text: str) -> datetime:
    """Go's RFC 3339 with nanoseconds (`2026-12-06T02:40:01.123456789+00:00`, or Z) → aware datetime."""
    text = text.replace("Z", "+00:00")
    if "." in text:
        head, rest = text.split(".", 1)
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[:min(digits, 6)]}{rest[digits:]}"
    return datetime.fromisoformat(text)


def is_lock_of(key: str, project: str, stack: str) -> bool:
    """A lock key of `stack`: `[<prefix>/].pulumi/locks/[<org>/<project>/]<stack>/<id>.json` (the
    CLI puts the URL's path, the database name, in front of every key)."""
    parts = key.split("/")
    if ".pulumi" not in parts or len(parts) < 4:
        return False
    after = parts[parts.index(".pulumi") + 1:]
    if after[0] != "locks" or not after[-1].endswith(".json"):
        return False
    scope = after[1:-1]
    return scope[-1:] == [stack] and (len(scope) == 1 or scope[-2:] == [project, stack])


def pulumi_locks(conn, url: str, project: str, stack: str) -> list[PulumiLock]:
    rows = conn.execute(f"SELECT key, data->>'data' FROM {table(url)} WHERE key LIKE %s",
                        (f"%.pulumi/locks/%{_like(stack)}/%.json",)).fetchall()
    out = []
    for key, data in rows:
        if not is_lock_of(key, project, stack):
            continue
        lock = json.loads(base64.b64decode(data))
        out.append(PulumiLock(key, int(lock.get("pid", 0)), str(lock.get("username", "?")),
                              str(lock.get("hostname", "?")), parse_time(str(lock.get("timestamp")))))
    return out


def dead_because(lock: PulumiLock, previous: Holder | None, host: str,
                 alive: Callable[[int], bool] = lock_holder_alive) -> str | None:
    """Why `lock` is a dead run's, or None when that cannot be known from here."""
    if lock.host == host:
        return None if alive(lock.pid) else f"its process (pid {lock.pid}) no longer runs on this machine"
    if previous and lock.host == previous.host and lock.since >= previous.since - _SLACK:
        return (f"the run that took it ({previous.who()}) ended without letting the stack go: "
                f"its session with the backend is gone")
    return None


def clear_dead(conn, url: str, project: str, stack: str, previous: Holder | None) -> list[str]:
    """Remove the dead runs' Pulumi locks of `stack`; one message per lock found."""
    host, messages = socket.gethostname(), []
    for lock in pulumi_locks(conn, url, project, stack):
        why = dead_because(lock, previous, host)
        if why:
            conn.execute(f"DELETE FROM {table(url)} WHERE key = %s", (lock.key,))
            messages.append(f"cleared the lock of stack {stack} taken by {lock.who()}: {why}")
        else:
            messages.append(f"stack {stack} is locked by a `pulumi` run outside this tool, {lock.who()}; if it "
                            f"no longer runs: pulumi cancel --stack {stack} --yes")
    return messages
