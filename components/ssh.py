"""Running a script on a node with the system's OpenSSH client: the node's host key pinned
(a known_hosts file of one line, StrictHostKeyChecking=yes), key auth only, bounded waits.

The script travels as the remote command (quoted once for the remote login shell); stdin stays
free for data and secrets, so a secret never appears in any process's arguments."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping

from .progress import split_lines


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
        argv = ["ssh", "-p", str(conn.port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
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


def run_script(conn: Connection, script: str, *, stdin: str | bytes | None = None, timeout_s: int = 3600,
               what: str = "script", on_line: Callable[[str], None] | None = None) -> tuple[str, str]:
    """(stdout, stderr) of `script` run by bash on the node; RemoteError when it fails.
    on_line, if given, sees each stderr line (a carriage return ends one) while the script runs."""
    data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
    with ssh_argv(conn) as argv:
        proc = subprocess.Popen([*argv, "bash -c " + shlex.quote(script)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out_chunks: list[bytes] = []
        err_chunks: list[bytes] = []
        readers = [threading.Thread(target=_drain, args=(proc.stdout, out_chunks, None), daemon=True),
                   threading.Thread(target=_drain, args=(proc.stderr, err_chunks, on_line), daemon=True)]
        for r in readers:
            r.start()
        try:
            if data:
                proc.stdin.write(data)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the script ended without reading its stdin: its status says the rest
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise RemoteError(f"{what} on {conn.host}: no answer within {timeout_s} s") from None
        finally:
            for r in readers:
                r.join(timeout=10)
    out = b"".join(out_chunks).decode(errors="replace")
    err = b"".join(err_chunks).decode(errors="replace")
    if proc.returncode == 255 and not out:
        raise RemoteError(f"{what}: cannot reach {conn.user}@{conn.host}:{conn.port} by SSH "
                          f"(unreachable, or its host key is not the pinned one): {err.strip()[-500:]}")
    if proc.returncode != 0:
        raise RemoteError(f"{what} on {conn.host} failed with exit status {proc.returncode}:\n"
                          f"{(err.strip() or out.strip())[-3000:]}")
    return out, err


def _drain(stream, chunks: list[bytes], on_line: Callable[[str], None] | None) -> None:
    """Read a pipe to its end; hand complete lines to on_line as they arrive."""
    pending = ""
    for chunk in iter(lambda: stream.read1(65536), b""):
        chunks.append(chunk)
        if on_line is not None:
            lines, pending = split_lines(pending + chunk.decode(errors="replace"))
            for line in lines:
                on_line(line)
    if on_line is not None and pending.strip():
        on_line(pending.strip())


def upload_dir(conn: Connection, local_dir: str, remote_dir: str, timeout_s: int = 7200) -> None:
    """Stream a local directory into remote_dir (created, emptied first) as one tar over SSH."""
    remote = (f"rm -rf {shlex.quote(remote_dir)} && mkdir -p {shlex.quote(remote_dir)} && "
              f"tar -xf - -C {shlex.quote(remote_dir)}")
    with ssh_argv(conn) as argv:
        tar = subprocess.Popen(["tar", "-C", local_dir, "-cf", "-", "."], stdout=subprocess.PIPE)
        try:
            done = subprocess.run([*argv, "bash -c " + shlex.quote(remote)], stdin=tar.stdout,
                                  capture_output=True, timeout=timeout_s)
        finally:
            tar.stdout.close()
            tar.wait()
    if tar.returncode != 0 or done.returncode != 0:
        raise RemoteError(f"upload of {local_dir} to {conn.host}:{remote_dir} failed: "
                          f"{done.stderr.decode(errors='replace').strip()[-1000:]}")
