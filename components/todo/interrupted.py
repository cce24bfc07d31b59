"""What an interrupted run left behind, told before the next one: the file backend's lock of a
`pulumi up` that was killed, and the operations the engine had started and not finished.

A lock is the backend's file `.pulumi/locks/<org>/<project>/<stack>/<id>.json` ({pid, username,
hostname, timestamp}). One taken on this machine by a process that no longer runs can only be
stale: it is removed, and said so. One held by a live process, or taken on another machine (its
process cannot be checked from here), is left alone and reported with the command that clears
it. Pending operations need nothing by hand: the next `up` warns of them and runs those steps
again (every script converges, and a step's lock on its node makes it wait for a script the
killed run left running there). Once a later run has finished such a step, its pending entry is
only noise (the engine clears a pending create only with an interactive `pulumi refresh`, and
repeats its warning on every `up`): with no run holding the stack and every pending entry
finished, they are dropped from the state (`pulumi stack export`, then `import`, which removes all
pending operations), and said so."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Mapping
from urllib.parse import urlparse

from components.steps import index

from .plan import state_records


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lock_files(backend_url: str, project: str, stack: str) -> list[Path]:
    """The lock files of `stack` in a file backend (none for other backends)."""
    url = urlparse(backend_url)
    if url.scheme != "file":
        return []
    root = Path(url.path) / ".pulumi" / "locks"
    found = list(root.glob(f"*/{project}/{stack}/*.json")) + list((root / stack).glob("*.json"))
    return sorted(p for p in found if p.is_file())


def clear_stale_locks(backend_url: str, project: str, stack: str, *, host: str | None = None) -> list[str]:
    """Remove this machine's locks of `stack` whose process is gone; one message per lock found."""
    host = host or socket.gethostname()
    messages = []
    for path in lock_files(backend_url, project, stack):
        try:
            lock = json.loads(path.read_text())
            pid, owner = int(lock.get("pid", 0)), f"{lock.get('username', '?')}@{lock.get('hostname', '?')}"
        except (OSError, ValueError, TypeError):
            messages.append(f"stack {stack} has a lock file that cannot be read ({path}); if no `pulumi` runs on "
                            f"it, clear it with: pulumi cancel --stack {stack} --yes")
            continue
        since = lock.get("timestamp", "?")
        if lock.get("hostname") == host and pid > 0 and not _alive(pid):
            path.unlink(missing_ok=True)
            messages.append(f"cleared the lock of stack {stack} left by a run that no longer exists "
                            f"(pid {pid}, {owner}, since {since})")
        elif lock.get("hostname") == host:
            messages.append(f"stack {stack} is being changed by pid {pid} ({owner}, since {since}); wait for it, "
                            f"or if that process is not a pulumi run: pulumi cancel --stack {stack} --yes")
        else:
            messages.append(f"stack {stack} is locked by a run on {lock.get('hostname')} (pid {pid}, {owner}, since "
                            f"{since}); if it is no longer running there: pulumi cancel --stack {stack} --yes")
    return messages


def pending_operations(deployment: Mapping) -> list[str]:
    """What the last run had started and not finished, in the todo list's words."""
    steps = index(state_records(deployment))
    out = []
    for op in deployment.get("pending_operations") or []:
        resource = op.get("resource") or {}
        urn, kind = resource.get("urn", "?"), op.get("type", "?")
        info = steps.get(urn)
        what = info.sentence("delete" if kind == "deleting" else "create") if info else urn.split("::")[-1]
        out.append(f"{what} ({kind}, interrupted)")
    return out


def settled(deployment: Mapping) -> tuple[dict, list[dict]]:
    """(the deployment without its settled pending operations, those operations). Settled: a
    create or update whose resource the state now holds (a later run finished that step), a
    delete whose resource it no longer holds. Everything else stays pending."""
    held = {r.get("urn") for r in deployment.get("resources") or []}
    keep, dropped = [], []
    for op in deployment.get("pending_operations") or []:
        urn = (op.get("resource") or {}).get("urn")
        done = urn in held if op.get("type") in ("creating", "updating") else \
            (op.get("type") == "deleting" and urn not in held)
        (dropped if done else keep).append(op)
    return {**deployment, "pending_operations": keep}, dropped


def drop_settled_operations(stack: str) -> list[str]:
    """Drop `stack`'s settled pending operations (settled()) from its state, through the CLI;
    one message per operation dropped (none when nothing is settled or there is no such stack)."""
    import subprocess
    import tempfile

    exported = subprocess.run(["pulumi", "stack", "export", "--stack", stack], capture_output=True, text=True)
    if exported.returncode != 0:
        return []   # no such stack yet, or no backend: nothing to tidy
    state = json.loads(exported.stdout)
    before = state.get("deployment") or {}
    after, dropped = settled(before)
    if not dropped:
        return []
    if after["pending_operations"]:
        # `pulumi stack import` removes every pending operation, not only the ones given up here.
        return [f"left {len(before['pending_operations'])} pending operations of stack {stack} as they are: "
                f"{len(after['pending_operations'])} of them are not finished yet, and the next `up` reports them"]
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump({**state, "deployment": after}, f)
        f.flush()
        imported = subprocess.run(["pulumi", "stack", "import", "--stack", stack, "--file", f.name],
                                  capture_output=True, text=True)
    if imported.returncode != 0:
        return [f"could not drop {len(dropped)} finished pending operations of stack {stack}: "
                f"{imported.stderr.strip()[-300:]}"]
    return [f"dropped the pending operation of {what}: a later run finished it"
            for what in pending_operations({**before, "pending_operations": dropped})]


def main(argv: list[str] | None = None) -> int:
    """python -m components.todo.interrupted --stack STACK: clear this machine's stale locks of
    STACK before a plain `pulumi up` (scripts/run-lab.sh does)."""
    import argparse
    import sys

    from components.config.load import PROJECT

    parser = argparse.ArgumentParser(prog="python -m components.todo.interrupted", description=main.__doc__)
    parser.add_argument("--stack", required=True)
    args = parser.parse_args(argv)
    backend = os.environ.get("PULUMI_BACKEND_URL", "")
    for message in clear_stale_locks(backend, PROJECT, args.stack):
        print(f"note: {message}", file=sys.stderr)
    if not lock_files(backend, PROJECT, args.stack):   # no run holds the stack
        for message in drop_settled_operations(args.stack):
            print(f"note: {message}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
