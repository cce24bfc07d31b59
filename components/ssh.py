"""The program's own read-only look at a node (components/observe): one script run with the
system's OpenSSH client while the program builds the plan — not a step, so not a resource. The
node's host key pinned (a known_hosts file of one line, StrictHostKeyChecking=yes), key auth
only, no user ssh config, bounded waits. Every change on a node is a step (components/remote.py)."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Mapping


@dataclass(frozen=True)
class Connection:
    host: str
    user: str
    port: int
    host_key: str
    private_key: str | None = None      # PEM text; None: the SSH agent answers
    connect_timeout_s: int = 10

    @classmethod
    def from_inputs(cls, c: Mapping) -> "Connection":
        return cls(host=c["host"], user=c["user"], port=int(c["port"]), host_key=c["host_key"],
                   private_key=c.get("private_key") or None, connect_timeout_s=int(c.get("connect_timeout_s", 10)))


class RemoteError(Exception):
    """A script that failed on its node: the message says where, the exit status and its output."""


@contextmanager
def ssh_argv(conn: Connection) -> Iterator[list[str]]:
    """argv prefix for `ssh` to this node; the key and known_hosts live in a private temp dir
    for the duration of the call only."""
    with tempfile.TemporaryDirectory(prefix="bws-ssh-") as tmp:
        known_hosts = os.path.join(tmp, "known_hosts")
        host = conn.host if conn.port == 22 else f"[{conn.host}]:{conn.port}"
        with open(known_hosts, "w") as f:
            f.write(f"{host} {conn.host_key}\n")
        argv = ["ssh", "-F", "/dev/null", "-p", str(conn.port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
                "-o", f"UserKnownHostsFile={known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
                "-o", f"ConnectTimeout={conn.connect_timeout_s}", "-o", "ServerAliveInterval=15",
                "-o", "ServerAliveCountMax=4", "-o", "LogLevel=ERROR"]
        if conn.private_key:
            key = os.path.join(tmp, "key")
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(conn.private_key if conn.private_key.endswith("\n") else conn.private_key + "\n")
            argv += ["-i", key, "-o", "IdentitiesOnly=yes"]
        yield [*argv, "-l", conn.user, conn.host]


def run_script(conn: Connection, script: str, *, timeout_s: int = 60, what: str = "script") -> tuple[str, str]:
    """(stdout, stderr) of `script` run by bash on the node; RemoteError when it fails, with
    ssh's own status (255) told apart from a script's failure."""
    with ssh_argv(conn) as argv:
        try:
            done = subprocess.run([*argv, "bash -c " + shlex.quote(script)], stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RemoteError(f"{what} on {conn.host}: no answer within {timeout_s} s") from None
    out = done.stdout.decode(errors="replace")
    err = done.stderr.decode(errors="replace")
    if done.returncode == 255 and not out:
        raise RemoteError(f"{what}: cannot reach {conn.user}@{conn.host}:{conn.port} by SSH "
                          f"(unreachable, or its host key is not the pinned one): {err.strip()[-500:]}")
    if done.returncode != 0:
        raise RemoteError(f"{what} on {conn.host} failed with exit status {done.returncode}:\n"
                          f"{(err.strip() or out.strip())[-3000:]}")
    return out, err
