"""What an interrupted run left behind, told before the next one: the file backend's lock of a
`pulumi up` that was killed, and the operations the engine had started and not finished.

A lock is the backend's file `.pulumi/locks/<org>/<project>/<stack>/<id>.json` ({pid, username,
hostname, timestamp}). One taken on this machine by a process that no longer runs can only be
stale: it is removed, and said so. One held by a live process, or taken on another machine (its
process cannot be checked from here), is left alone and reported with the command that clears
it.

Pending operations need nothing by hand. Every resource of the program is a step (a command of
pulumi-command, components/steps/remote.py) whose script converges, and a step's lock on its node makes
it wait for a script the killed run left running there: the next `up` runs such a step again from
its start (a create the state does not hold is created again; an update or a delete whose resource
it still holds is redone) and it converges. Pulumi's engine does not know that: on every `up`
while the state holds a pending operation it warns that those resources are "in an unknown state"
and advises `pulumi refresh`, run interactively to clear a pending create (which it otherwise keeps
for ever). That advice does not apply here, so before an `up`, with no run holding the stack, the
pending operations are taken out of the state (`pulumi stack export`, then `import`, which removes
them all) and one line says what is resumed; an operation a later run already finished is only
dropped, and said so. An operation on a resource that is not such a step (no program of ours makes
one; an operator's own import, say) is not ours to judge: then the state is left as it is, and
Pulumi's warning, which applies to it, is shown as it comes."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Mapping
from urllib.parse import urlparse

from components.backend.locks import lock_holder_alive
from components.steps.info import index
from components.todo.plan import state_records


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
        if lock.get("hostname") == host and pid > 0 and not lock_holder_alive(pid):
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
    create whose resource the state now holds (a later run finished that step). The engine keeps
    only pending creates past the next `up` (it drops the others when it writes its state), so a
    pending update or delete in the state was not finished by any later run: it stays pending."""
    held = {r.get("urn") for r in deployment.get("resources") or []}
    keep, dropped = [], []
    for op in deployment.get("pending_operations") or []:
        done = op.get("type") == "creating" and (op.get("resource") or {}).get("urn") in held
        (dropped if done else keep).append(op)
    return {**deployment, "pending_operations": keep}, dropped


# The resources whose interrupted operation the next `up` redoes by itself: our steps, and the
# provider that runs them (its "create" is the engine loading it).
RESUMABLE_TYPES = ("command:remote:Command", "command:local:Command", "pulumi:providers:command")


def resumable(op: Mapping) -> bool:
    return (op.get("resource") or {}).get("type") in RESUMABLE_TYPES


def resume_line(deployment: Mapping, resumed: list[dict]) -> str:
    """The one line that says what this run resumes, and why Pulumi's advice does not apply."""
    what = pending_operations({**deployment, "pending_operations": resumed})
    return (f"resuming {len(resumed)} step{'s' if len(resumed) != 1 else ''} a killed run left unfinished: "
            f"{'; '.join(what)}. Each runs again from its start and converges (its script is idempotent and "
            f"waits on its node for one still running): nothing to repair by hand")


def resume_interrupted(stack: str, work_dir: str | os.PathLike | None = None) -> list[str]:
    """Take `stack`'s pending operations out of its state before an `up` when each is settled (a
    later run finished it: dropped) or one of our steps (the `up` runs it again: resumed); through
    the CLI, in `work_dir` (the project). The messages: one per operation dropped, one line for
    all resumed; none when there are no pending operations or no such stack. Call it only when no
    run holds the stack (lock_files() empty)."""
    import subprocess
    import tempfile

    exported = subprocess.run(["pulumi", "stack", "export", "--stack", stack], capture_output=True, text=True,
                              cwd=work_dir)
    if exported.returncode != 0:
        return []   # no such stack yet, or no backend: nothing to tidy
    state = json.loads(exported.stdout)
    before = state.get("deployment") or {}
    after, dropped = settled(before)
    resumed = [op for op in after["pending_operations"] if resumable(op)]
    foreign = [op for op in after["pending_operations"] if not resumable(op)]
    if foreign:
        # `pulumi stack import` removes every pending operation, not only the ones taken out here.
        names = "; ".join(pending_operations({**before, "pending_operations": foreign}))
        return [f"left {len(before['pending_operations'])} pending operations of stack {stack} as they are: "
                f"{len(foreign)} of them are not steps of this project ({names}); the next `up` warns of them, "
                f"and its advice applies to those"]
    if not dropped and not resumed:
        return []
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump({**state, "deployment": {**after, "pending_operations": []}}, f)
        f.flush()
        imported = subprocess.run(["pulumi", "stack", "import", "--stack", stack, "--file", f.name],
                                  capture_output=True, text=True, cwd=work_dir)
    if imported.returncode != 0:
        return [f"could not take {len(dropped) + len(resumed)} pending operations out of stack {stack}'s state "
                f"(the next `up` redoes them all the same, and warns of them): {imported.stderr.strip()[-300:]}"]
    messages = [f"dropped the pending operation of {what}: a later run finished it"
                for what in pending_operations({**before, "pending_operations": dropped})]
    return messages + ([resume_line(before, resumed)] if resumed else [])


def main(argv: list[str] | None = None) -> int:
    """python -m components.todo.interrupted --stack STACK: before a plain `pulumi up` of STACK
    (scripts/run-lab.sh runs it), clear this machine's stale locks of it and resume what a killed
    run left unfinished (resume_interrupted())."""
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
        for message in resume_interrupted(args.stack):
            print(f"note: {message}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
