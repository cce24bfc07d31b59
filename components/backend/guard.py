"""One run at a time per stack on a PostgreSQL backend, in PostgreSQL's own terms.

Pulumi's DIY lock (pkg/backend/diy/lock.go) is check, write, check again over rows of the state
table, each statement its own transaction: two runs that start together can both see the other's
row on the second check, and then both stop (neither changes anything); nothing names a lease, so
a killed run's row stays. A session-level advisory lock has neither problem: PostgreSQL grants it
to exactly one session, atomically, and drops it when that session ends, which it does when the
holder's process dies (its socket closes) or, for a machine that vanished, when the server's TCP
keepalives give up on it (set per session below: about 25 s). So a live run's guard is never
taken, and a dead one's never blocks.

Who holds it is told from a row (bws_stack_runs: user, host, pid, since by the holder's clock),
written once the lock is held; the row outlives a dead run, which is how the next run knows the
Pulumi lock that run left is its own (components/backend/locks.py). The server names the session
that holds the lock (its application_name says user@host (pid)): the row is told only when it is
that session's, so the instant between the lock and the row (found by the lab's two-machine race:
the row then still names nobody, or a dead run before it) shows the holder too, with the time its
session began."""

from __future__ import annotations

import getpass
import hashlib
import os
import socket
from dataclasses import dataclass
from datetime import datetime, timezone

from components.backend.url import BackendError, check_passfile, conninfo, redact

TABLE = "bws_stack_runs"
# Any fixed key: serialises the CREATE TABLE of two first runs (IF NOT EXISTS alone can race).
_DDL_KEY = 0x6277735f646c   # "bws_dl"
# The server drops a vanished client's session (and so its lock) after idle + interval × count.
KEEPALIVE = {"tcp_keepalives_idle": 10, "tcp_keepalives_interval": 5, "tcp_keepalives_count": 3}


class StackBusy(Exception):
    """Another live run holds the stack; the message names it and says this run changed nothing."""


@dataclass(frozen=True)
class Holder:
    user: str
    host: str
    pid: int
    since: datetime

    def who(self) -> str:
        since = self.since.astimezone(timezone.utc)
        return f"{_me(self.user, self.host, self.pid)} since {since:%Y-%m-%d %H:%M:%S} UTC"


def lock_key(project: str, stack: str) -> int:
    """The advisory lock's bigint for one stack of one project."""
    digest = hashlib.sha256(f"blackwell-serving:{project}/{stack}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def connect(url: str):
    import psycopg

    check_passfile()
    try:
        conn = psycopg.connect(conninfo(url), autocommit=True, connect_timeout=10,
                               application_name=f"bws {_me(getpass.getuser(), socket.gethostname(), os.getpid())}"[:63])
    except psycopg.OperationalError as err:
        raise BackendError(f"cannot reach the team backend {redact(url)}: {str(err).strip()}; fix: check the URL, "
                           f"and PGPASSFILE (host:port:db:user:password, mode 0600)") from None
    for name, value in KEEPALIVE.items():
        conn.execute(f"SET {name} = {int(value)}")
    return conn


def _ensure_table(conn) -> None:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_KEY,))
        conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (stack text PRIMARY KEY, username text NOT NULL, "
                     f"hostname text NOT NULL, pid integer NOT NULL, since timestamptz NOT NULL)")


def _row(conn, name: str) -> Holder | None:
    row = conn.execute(f"SELECT username, hostname, pid, since FROM {TABLE} WHERE stack = %s", (name,)).fetchone()
    return Holder(*row) if row else None


def _me(user: str, host: str, pid: int) -> str:
    return f"{user}@{host} (pid {pid})"


def _session_of(conn, key: int) -> tuple[str, datetime] | None:
    """Who holds `key` as the server sees it: the holder's application_name (without `bws `) and
    the time its session began; None when nobody does."""
    # A bigint advisory key shows in pg_locks as classid (high 32 bits), objid (low), objsubid 1.
    row = conn.execute(
        "SELECT a.application_name, a.backend_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid "
        "AND l.objsubid = 1", ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF)).fetchone()
    return (row[0].removeprefix("bws "), row[1]) if row else None


def holder_of(conn, name: str, key: int) -> str:
    """Who holds the stack, for the message of a run that does not get it: the row when it is the
    holding session's (its `since` is when the lock was taken), else the session itself."""
    row, session = _row(conn, name), _session_of(conn, key)
    if session is None:
        return "a run that just ended"
    if row and _me(row.user, row.host, row.pid) == session[0]:
        return row.who()
    return f"{session[0]} since {session[1].astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"


class Guard:
    """The held guard of one stack: `previous` is the row of the last run that held it and did not
    end cleanly (a dead run), else None. release() (or the process's end) lets it go."""

    def __init__(self, conn, name: str, key: int, previous: Holder | None, me: Holder):
        self.conn, self.name, self.key, self.previous, self.me = conn, name, key, previous, me

    def release(self) -> None:
        if self.conn.closed:
            return
        try:
            self.conn.execute(f"DELETE FROM {TABLE} WHERE stack = %s AND hostname = %s AND pid = %s",
                              (self.name, self.me.host, self.me.pid))
            self.conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
        finally:
            self.conn.close()

    def __enter__(self) -> "Guard":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def acquire(url: str, project: str, stack: str) -> Guard:
    """Hold `stack` for this process's run, or raise StackBusy naming who holds it."""
    name, key = f"{project}/{stack}", lock_key(project, stack)
    conn = connect(url)
    try:
        _ensure_table(conn)
        if not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
            raise StackBusy(f"stack {stack} is being changed by {holder_of(conn, name, key)}; this run changed "
                            f"nothing: wait for that run to end, then run again")
        previous = _row(conn, name)   # a row left while nobody holds the lock: its run died
        me = Holder(getpass.getuser(), socket.gethostname(), os.getpid(), datetime.now(timezone.utc))
        conn.execute(f"INSERT INTO {TABLE} (stack, username, hostname, pid, since) VALUES (%s, %s, %s, %s, %s) "
                     f"ON CONFLICT (stack) DO UPDATE SET username = EXCLUDED.username, hostname = EXCLUDED.hostname, "
                     f"pid = EXCLUDED.pid, since = EXCLUDED.since", (name, me.user, me.host, me.pid, me.since))
        return Guard(conn, name, key, previous, me)
    except BaseException:
        conn.close()
        raise
