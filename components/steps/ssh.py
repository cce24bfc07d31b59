"""The program's own read-only look at a node (components/facts): one script run with the
system's OpenSSH client while the program builds the plan — not a step, so not a resource. The
node's host key pinned (a known_hosts file of one line, StrictHostKeyChecking=yes), key auth
only, no user ssh config, bounded waits. Every change on a node is a step (components/steps/remote.py)."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Mapping

from components.names import temp_prefix


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
def ssh_argv(conn: Connection) -> Iterator[tuple[list[str], dict]]:
    """(argv prefix for `ssh` to this node, its environment). The pinned known_hosts lives in a
    private temp dir for the call only; the key is never written anywhere: an ssh-agent of this
    call holds it in memory (key_agent)."""
    with tempfile.TemporaryDirectory(prefix=temp_prefix("ssh")) as tmp, key_agent(conn.private_key, tmp) as env:
        known_hosts = os.path.join(tmp, "known_hosts")
        host = conn.host if conn.port == 22 else f"[{conn.host}]:{conn.port}"
        with open(known_hosts, "w") as f:
            f.write(f"{host} {conn.host_key}\n")
        argv = ["ssh", "-F", "/dev/null", "-p", str(conn.port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
                "-o", f"UserKnownHostsFile={known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
                "-o", f"ConnectTimeout={conn.connect_timeout_s}", "-o", "ServerAliveInterval=15",
                "-o", "ServerAliveCountMax=4", "-o", "LogLevel=ERROR"]
        yield [*argv, "-l", conn.user, conn.host], env


@contextmanager
def key_agent(private_key: str | None, directory: str) -> Iterator[dict]:
    """The environment for ssh with `private_key` held by an ssh-agent of our own, listening in
    `directory`: the key stays in memory, never in a file. The agent runs `cat` on a pipe from
    this process as its command: when this process ends, however (a SIGKILL too), the pipe
    closes, cat ends, and the agent follows it within its 10 s check. Without a key: the
    caller's own agent, if any."""
    env = dict(os.environ)
    if not private_key:
        yield env
        return
    sock = os.path.join(directory, "agent.sock")
    agent = subprocess.Popen(["ssh-agent", "-a", sock, "cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    env["SSH_AUTH_SOCK"] = sock
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            if agent.poll() is not None or time.monotonic() > deadline:
                raise RemoteError("ssh-agent did not start")
            time.sleep(0.01)
        text = private_key if private_key.endswith("\n") else private_key + "\n"
        while True:
            added = subprocess.run(["ssh-add", "-q", "-"], input=text.encode(), env=env, capture_output=True,
                                   timeout=10)
            # The agent creates its socket before it listens: on a busy machine ssh-add can come
            # in between ("Error connecting to agent: Connection refused"); it is asked again.
            if added.returncode == 0 or b"Error connecting to agent" not in added.stderr \
                    or agent.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if added.returncode != 0:
            raise RemoteError(f"the stack's SSH key was refused: {added.stderr.decode(errors='replace').strip()}")
        yield env
    finally:
        subprocess.run(["ssh-add", "-q", "-D"], env=env, capture_output=True, timeout=10)  # the key goes now
        agent.stdin.close()
        agent.wait()


def run_script(conn: Connection, script: str, *, timeout_s: int = 60, what: str = "script") -> tuple[str, str]:
    """(stdout, stderr) of `script` run by bash on the node; RemoteError when it fails, with
    ssh's own status (255) told apart from a script's failure."""
    return run_line(conn, "bash -c " + shlex.quote(script), timeout_s=timeout_s, what=what)


def run_line(conn: Connection, line: str, *, stdin: str = "", timeout_s: int = 60,
             what: str = "script") -> tuple[str, str]:
    """(stdout, stderr) of a command line given to the node's login shell, as a step's provider
    runs it (components/steps/remote.py command_line), with `stdin` as its input."""
    with ssh_argv(conn) as (argv, env):
        try:
            done = subprocess.run([*argv, line], input=stdin.encode(), capture_output=True, timeout=timeout_s,
                                  env=env)
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
