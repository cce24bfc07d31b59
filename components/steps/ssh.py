"""How this program reaches a node by SSH: one typed Connection per node (built once, from its
stack entry), which gives pulumi-command's ConnectionArgs to the steps (components/steps/remote.py)
and the system's OpenSSH client to the program's own read-only look (the observation, a
rollback, the todo list's status, discovery): one script run while the program builds the plan
or reads a node — not a step, so not a resource. Both pin the node's host key (for OpenSSH a
known_hosts file of one line, StrictHostKeyChecking=yes), key auth only, no user ssh config,
bounded waits. Every change on a node is a step (components/steps/remote.py)."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

import pulumi
from pulumi_command import remote as command_remote

from components.names import temp_prefix

if TYPE_CHECKING:
    from components.config.schema import NodeSpec

# A step's dials of an unreachable node: it fails after DIAL_ERROR_LIMIT dials of at most
# PER_DIAL_TIMEOUT_S each, plus the provider's backoff between them: well under a minute.
DIAL_ERROR_LIMIT = 3
PER_DIAL_TIMEOUT_S = 10


@dataclass(frozen=True)
class Connection:
    """One node's SSH: its pinned host key, key auth only. private_key is the PEM text (None: the
    SSH agent answers); it is never shown (repr) and reaches a resource input only as a Pulumi
    secret (command_args), so the state keeps it encrypted."""
    host: str
    user: str
    port: int
    host_key: str
    private_key: str | None = field(default=None, repr=False)
    connect_timeout_s: int = 10

    @classmethod
    def of_node(cls, spec: NodeSpec, private_key: str | None) -> "Connection":
        """A node of the stack config, with the key its ssh entry names, read by the caller."""
        return cls(host=spec.host, user=spec.ssh.user, port=spec.ssh.port, host_key=spec.ssh.host_key,
                   private_key=private_key or None, connect_timeout_s=spec.ssh.connect_timeout_s)

    def secret_key(self) -> pulumi.Output[str] | None:
        """The key as a resource input takes it: a secret."""
        return pulumi.Output.secret(self.private_key) if self.private_key else None

    def command_args(self) -> command_remote.ConnectionArgs:
        """pulumi-command's connection of a step to this node (its provider dials it)."""
        return command_remote.ConnectionArgs(
            host=self.host, port=self.port, user=self.user, private_key=self.secret_key(), host_key=self.host_key,
            dial_error_limit=DIAL_ERROR_LIMIT, per_dial_timeout=min(PER_DIAL_TIMEOUT_S, self.connect_timeout_s))

    @contextmanager
    def openssh(self) -> Iterator[tuple[list[str], dict]]:
        """(argv prefix for the system's `ssh` to this node, its environment). The pinned
        known_hosts lives in a private temp dir for the call only; the key is never written
        anywhere: an ssh-agent of this call holds it in memory (key_agent)."""
        with tempfile.TemporaryDirectory(prefix=temp_prefix("ssh")) as tmp, key_agent(self.private_key, tmp) as env:
            known_hosts = os.path.join(tmp, "known_hosts")
            host = self.host if self.port == 22 else f"[{self.host}]:{self.port}"
            with open(known_hosts, "w") as f:
                f.write(f"{host} {self.host_key}\n")
            argv = ["ssh", "-F", "/dev/null", "-p", str(self.port), "-o", "BatchMode=yes",
                    "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known_hosts}",
                    "-o", "GlobalKnownHostsFile=/dev/null", "-o", f"ConnectTimeout={self.connect_timeout_s}",
                    "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4", "-o", "LogLevel=ERROR"]
            yield [*argv, "-l", self.user, self.host], env


class RemoteError(Exception):
    """A script that failed on its node: the message says where, the exit status and its output."""


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
    with conn.openssh() as (argv, env):
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
