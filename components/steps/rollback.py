"""Rollback: an `up` that fails once it has begun to change what serves puts the nodes back as
they were before it, in the same run, and fails with one message.

Which steps are undone, and how, is Pulumi's own knowledge of the run, read through resource
hooks (they run in this program while the engine executes the steps):
- a step that changes what serves (a retirement, one of our units) tells us, as it starts, how
  to undo it: a step being created is undone by its own delete script (the unit removed, the
  retired service started again), an update of one of our units by its previous create script
  (the previous unit text and image, restarted: the deployment that served before; its secret
  EnvironmentFile is another step's, never undone, so the node keeps what the state records);
- the first step that fails, anywhere, runs those undos (removals newest first, then previous
  versions oldest first: undo_order), after reading the last lines of our units' journals, and
  logs what failed, those lines and what was put back; each undo is a live todo item. Steps not yet started then fail at once ("rollback under way").

Images, model caches and checks are never undone: the next try starts from them. The state keeps
what the engine recorded, so the next preview shows each undone step as pending again (drift),
which is the todo list of the failed swap. An undo waits for a still-running step on its node
(they share the step's lock, components/steps/remote.py), so it never races it."""

from __future__ import annotations

import asyncio
import re
import shlex
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping

import pulumi
from pulumi.resource_hooks import ErrorHook, ErrorHookArgs, ResourceHook, ResourceHookArgs, ResourceHookBinding

from components import names
from components.steps.failure import condense
from components.steps.ssh import Connection, RemoteError, run_line

# How a step is put back: "remove" runs its delete script (steps being created); "previous"
# also runs its previous create script when it is updated (our units); "switch" runs only that,
# before the units (an engine venv: its `current` link back on the previous build, which is
# kept); "check" runs only that, last (a health gate: the previous deployment answers again).
Undo = Literal["remove", "previous", "switch", "check"]
UNDO_TIMEOUT_S = 900
JOURNAL_LINES = 20
# Each undo is logged as it starts and ends, "rollback <state>: <node>: <sentence>", which the
# live todo list (components/todo/live.py) shows as items of their own.
_PROGRESS = re.compile(r"^rollback (started|done|failed): ([^:]+): (.+)$")


def progress_line(state: str, node: str, sentence: str) -> str:
    return f"rollback {state}: {node}: {sentence}"


def parse_progress(message: str) -> tuple[str, str, str] | None:
    """(state, node, sentence) of a progress line; None for any other message."""
    m = _PROGRESS.match(message.strip())
    return (m.group(1), m.group(2), m.group(3)) if m else None


@dataclass
class Action:
    node: str
    sentence: str
    kind: Undo          # "remove": the step's delete script; "previous"/"check": its previous create script
    line: Any           # the command line (may arrive as a secret Output)
    stdin: Any
    unit: str | None


@dataclass
class Rollback:
    """One per stack. connections: node name → its SSH (components/steps/ssh.py), read by the program
    itself; run_line is the transport (tests give their own)."""
    connections: Mapping[str, Connection]
    enabled: bool = True
    run_line: Callable[..., tuple[str, str]] = run_line
    actions: list[Action] = field(default_factory=list)
    report: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _error_hook: ErrorHook | None = None

    def binding(self, label: str, node: str, *, undo: Undo | None, undo_sentence: str,
                restore_sentence: str | None = None, unit: str | None = None) -> ResourceHookBinding | None:
        """The hooks of one step: every step reports its failure; a step that changes what serves
        also records how to undo it as it starts."""
        if not self.enabled:
            return None
        if self._error_hook is None:
            self._error_hook = ErrorHook("blackwell-rollback", self.on_error)
        if undo is None:
            return ResourceHookBinding(on_error=[self._error_hook])
        before_create, before_update = self.recorders(label, node, undo=undo, undo_sentence=undo_sentence,
                                                      restore_sentence=restore_sentence, unit=unit)
        hook = f"blackwell-undo-{label}".replace(" ", "-")
        return ResourceHookBinding(before_create=[ResourceHook(hook + "-create", before_create)],
                                   before_update=[ResourceHook(hook + "-update", before_update)],
                                   on_error=[self._error_hook])

    def recorders(self, label: str, node: str, *, undo: Undo, undo_sentence: str, restore_sentence: str | None = None,
                  unit: str | None = None) -> tuple[Callable[[ResourceHookArgs], None], Callable[[ResourceHookArgs], None]]:
        """(before_create, before_update) of a step that changes what serves."""
        def before_create(args: ResourceHookArgs) -> None:
            self._refuse_during_rollback(label)
            if undo in ("remove", "previous") and args.new_inputs and args.new_inputs.get("delete"):
                self._record(Action(node, undo_sentence, "remove", args.new_inputs["delete"],
                                    args.new_inputs.get("stdin", ""), unit))

        def before_update(args: ResourceHookArgs) -> None:
            self._refuse_during_rollback(label)
            if undo != "remove" and args.old_inputs and args.old_inputs.get("create"):
                self._record(Action(node, restore_sentence or undo_sentence, undo, args.old_inputs["create"],
                                    args.old_inputs.get("stdin", ""), unit))
        return before_create, before_update

    def _record(self, action: Action) -> None:
        with self._lock:
            self.actions.append(action)

    def _refuse_during_rollback(self, label: str) -> None:
        if self.report is not None:
            raise RuntimeError(f"not started: the run is rolling back after a failure ({label})")

    async def on_error(self, args: ErrorHookArgs) -> bool:
        with self._lock:
            if self.report is not None or not self.actions:
                return False
            self.report = "under way"
            actions = undo_order(self.actions)
        resolved = [Action(a.node, a.sentence, a.kind, await _plain(a.line), await _plain(a.stdin), a.unit)
                    for a in actions]
        failed = args.errors[0] if args.errors else f"{args.failed_operation} failed"
        self.report = await asyncio.to_thread(self.roll_back, args.name, failed, resolved)
        pulumi.log.error(self.report)
        return False

    def roll_back(self, step: str, error: str, actions: list[Action]) -> str:
        """Undo `actions` in their order; the failure message (what failed, our units' last
        journal lines per node, what was put back and what could not be)."""
        journals = self._journals(actions)
        done, failed = [], []
        for a in actions:  # already in undo_order
            pulumi.log.info(progress_line("started", a.node, a.sentence))
            try:
                self.run_line(self.connections[a.node], a.line, stdin=a.stdin, timeout_s=UNDO_TIMEOUT_S,
                              what=f"rollback: {a.sentence}")
                if a.kind == "previous" and a.unit:
                    # The state records the unit's new text, the node runs the previous one: the
                    # mark makes the preview name it (components/facts/unit_state.py).
                    self.run_line(self.connections[a.node], f"touch {shlex.quote(names.unit_put_back_mark(a.unit))}",
                                  timeout_s=30, what=f"rollback: mark {a.unit} put back")
                done.append(a.sentence)
                pulumi.log.info(progress_line("done", a.node, a.sentence))
            except (RemoteError, OSError) as err:
                failed.append(f"{a.sentence}: {err}")
                pulumi.log.info(progress_line("failed", a.node, a.sentence))
        lines = [f"`up` failed at step {step}:", *("  " + line for line in condense(error)),
                 "The run was rolled back (rollback: auto): every service it stopped runs again, every unit it "
                 "started or changed is removed or back to its previous version; images and model caches are kept, "
                 "so the next try starts from them."]
        for node, text in journals.items():
            lines += [f"Last lines of our units' journal on {node}:", *("  " + line for line in text.splitlines())]
        lines += ["Put back:", *(f"  - {s}" for s in done)] if done else ["Nothing needed putting back."]
        if failed:
            lines += ["NOT put back (fix by hand, then run `pulumi up` again):", *(f"  - {s}" for s in failed)]
        lines.append("Fix the cause, then `pulumi preview` lists what is still to do.")
        return "\n".join(lines)

    def _journals(self, actions: list[Action]) -> dict[str, str]:
        units: dict[str, list[str]] = {}
        for a in actions:
            if a.unit and a.unit not in units.setdefault(a.node, []):
                units[a.node].append(a.unit)
        journals = {}
        for node, names in units.items():
            if not names:
                continue
            args = " ".join(f"-u {shlex.quote(n)}" for n in names)
            try:
                out, _ = self.run_line(self.connections[node], f"journalctl --no-pager -o cat -n {JOURNAL_LINES} {args}",
                                       timeout_s=30, what="journal")
                journals[node] = out.strip() or "(empty)"
            except (RemoteError, OSError) as err:
                journals[node] = f"(not readable: {err})"
        return journals


def undo_order(actions: list[Action]) -> list[Action]:
    """Removals in the reverse order of their start (the engine before the Ray cluster it runs
    on, our units before the services they replaced come back), then the previous versions of
    our units in the order they started, after the engine venvs they run (the Ray head before its
    workers, then the engine), then the previous health gates (the restored deployment answers a real completion again)."""
    return ([a for a in reversed(actions) if a.kind == "remove"]
            + [a for a in actions if a.kind == "switch"]
            + [a for a in actions if a.kind == "previous"]
            + [a for a in actions if a.kind == "check"])


async def _plain(value: Any) -> Any:
    """A hook's input value: secrets arrive as Outputs."""
    return await value.future() if isinstance(value, pulumi.Output) else value

