"""One read-only run of the discovery script on a machine, over SSH with its trusted host key
pinned (components/steps/ssh.py: key auth only, no user ssh config, the key held by an agent of ours)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from components import names
from components.discover.facts import DiscoveryError, MachineFacts, parse
from components.steps.render import render
from components.steps.ssh import Connection, RemoteError, run_line

TEMPLATE = "scripts/discover.sh.j2"


def script() -> str:
    """The discovery script: plain POSIX sh, with the reading shells it shares with the preflight
    and the status view (components/facts/readings.py) included."""
    return render(TEMPLATE)


@dataclass(frozen=True)
class Target:
    """A machine to discover: its name in the stack (None: from its host name) and how to reach it."""
    name: str | None
    host: str
    port: int = 22

    @classmethod
    def parse(cls, text: str, port: int) -> "Target":
        name, sep, host = text.rpartition("=")
        return cls(name=name if sep else None, host=host, port=port)


def probe(target: Target, user: str, host_key: str, private_key: str | None, timeout_s: int = 120) -> MachineFacts:
    """The machine's facts; the script runs under `sh` (plain POSIX) fed on stdin."""
    conn = Connection(host=target.host, user=user, port=target.port, host_key=host_key, private_key=private_key)
    try:
        out, _ = run_line(conn, f"sh -s {shlex.quote(names.PREFIX)}", stdin=script(), timeout_s=timeout_s, what="discovery")
    except RemoteError as exc:
        raise DiscoveryError(f"{target.host}: {exc}; fix: check --user and --identity (key login as that user)") from None
    return parse(target.host, out)


if __name__ == "__main__":  # the script, to run by hand: python -m components.discover.probe | ssh HOST sh -s PREFIX
    print(script(), end="")
