"""Following an `up`: engine event dicts → item status transitions and progress lines.

resourcePreEvent → in_progress, resOutputsEvent → completed, resOpFailedEvent → failed. A
diagnostic event of an item is its script's live output, which the provider attaches to the
step's URN: the scripts already keep it to progress (their `[blackwell …]` lines, percentages by
tenths, docker's load and build headers; templates/scripts/_progress.sh.j2), so each line is
shown under its item. Warnings and errors are always shown. Each printed line starts with a
wall-clock stamp; nothing is redrawn.
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Callable, Mapping, Sequence

from components.steps import failure
from components.steps.info import StepInfo
from components.steps.rollback import parse_progress
from components.todo.plan import Item, is_work, item_for, merge_steps, urn_name
from components.todo.views import MARK

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|<\{%[^%]*%\}>")
_SKIP_OPS = {"same", "read", "refresh"}


def _clean(message: str) -> list[str]:
    """A diagnostic message → its non-empty lines; a carriage return starts a new line."""
    text = _ANSI.sub("", message)
    return [p.strip() for p in re.split(r"[\r\n]+", text) if p.strip()]


class LiveTodo:
    """The todo list during an `up`. handle(event) returns the lines to print for that event."""

    def __init__(self, items: Sequence[Item], *, steps: Mapping[str, StepInfo] | None = None,
                 stamp: Callable[[], str] | None = None,
                 clock: Callable[[], float] = time.monotonic, verbose: bool = False):
        self.items: list[Item] = list(items)
        self.by_urn = {it.urn: it for it in self.items}
        self.number = {it.id: i for i, it in enumerate(self.items, 1)}
        self.steps = dict(steps or {})
        self.stamp = stamp or (lambda: datetime.now().strftime("%H:%M:%S"))
        self.clock = clock
        self.started = clock()
        self.verbose = verbose
        self.transitions: list[tuple[str, str, str]] = []  # (item id, from, to)

    # -- events ------------------------------------------------------------------------------

    def handle(self, event: Mapping) -> list[str]:
        if "resourcePreEvent" in event and event["resourcePreEvent"]:
            md = event["resourcePreEvent"].get("metadata") or {}
            return self._start(md)
        if "resOutputsEvent" in event and event["resOutputsEvent"]:
            md = event["resOutputsEvent"].get("metadata") or {}
            return self._move(md.get("urn", ""), "completed")
        if "resOpFailedEvent" in event and event["resOpFailedEvent"]:
            md = event["resOpFailedEvent"].get("metadata") or {}
            return self._move(md.get("urn", ""), "failed")
        if "diagnosticEvent" in event and event["diagnosticEvent"]:
            return self._diagnostic(event["diagnosticEvent"])
        return []

    def _start(self, md: Mapping) -> list[str]:
        urn = md.get("urn", "")
        if md.get("op") in _SKIP_OPS:
            return []
        lines: list[str] = []
        if urn not in self.by_urn:
            step = merge_steps([md])[0]
            if not is_work(step.type, step.custom):
                return []
            # Not in the preview (the nodes or the state moved since): added at the end.
            item = item_for(step, self._free_id(urn_name(urn)), self.steps)
            self.items.append(item)
            self.by_urn[urn] = item
            self.number[item.id] = len(self.items)
            lines.append(f"{self.stamp()}  + new item {self.number[item.id]}: {item.content} ({item.reason})")
        return lines + self._move(urn, "in_progress")

    def _free_id(self, base: str) -> str:
        used = {it.id for it in self.items}
        candidate, i = base, 2
        while candidate in used:
            candidate, i = f"{base}-{i}", i + 1
        return candidate

    def _move(self, urn: str, status: str) -> list[str]:
        item = self.by_urn.get(urn)
        if item is None or item.status == status:
            return []
        if item.status in ("completed", "failed"):
            return []  # final: a failed item stays failed, a completed one never goes back
        before, item.status = item.status, status
        self.transitions.append((item.id, before, status))
        node = f" [{item.node}]" if item.node else ""
        return [f"{self.stamp()}  {MARK[status]} {self.number[item.id]:>2}. {item.content}{node}"
                f"  {before} -> {status}"]

    def _diagnostic(self, diag: Mapping) -> list[str]:
        severity = str(diag.get("severity", "info"))
        undo = parse_progress(str(diag.get("message", ""))) if severity == "info" else None
        if undo is not None:
            return self._rollback(*undo)
        item = self.by_urn.get(diag.get("urn") or "")
        prefix = f"{self.stamp()}      {self.number[item.id]:>2}. " if item else f"{self.stamp()}      "
        message = str(diag.get("message", ""))
        if severity == "error" and message.strip() == "update failed":
            return []  # the engine's closing word: the summary says it
        if severity == "error":
            # A failed step: its status here, its whole block in the summary (failure.py).
            status = failure.status_line(_ANSI.sub("", message))
            if status is not None:
                return [f"{prefix}error: {status}; what failed and the fix: at the end"]
            message = "\n".join(failure.condense(_ANSI.sub("", message)))
        out: list[str] = []
        for line in _clean(message):
            if severity in ("warning", "error"):
                out.append(f"{prefix}{severity}: {line}")
            elif item is not None or (self.verbose and severity != "debug"):
                out.append(prefix + line)
        return out

    def _rollback(self, state: str, node: str, sentence: str) -> list[str]:
        """An undo of a failed run's rollback (components/steps/rollback.py): an item of its own."""
        key = f"rollback:{node}:{sentence}"
        lines: list[str] = []
        if key not in self.by_urn:
            item = Item(id=self._free_id("rollback"), content=f"Rollback: {sentence}", priority="high",
                        status="pending", node=node, phase="retire", reason="rollback after a failure", urn=key)
            self.items.append(item)
            self.by_urn[key] = item
            self.number[item.id] = len(self.items)
            lines.append(f"{self.stamp()}  + new item {self.number[item.id]}: {item.content} ({item.reason})")
        status = {"started": "in_progress", "done": "completed", "failed": "failed"}[state]
        return lines + self._move(key, status)

    # -- the end -----------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in MARK}
        for it in self.items:
            out[it.status] = out.get(it.status, 0) + 1
        return out

    def summary(self, error: str | None = None) -> str:
        c = self.counts()
        elapsed = int(self.clock() - self.started)
        head = "up failed" if error or c["failed"] else "up finished"
        parts = [f"{c['completed']} completed", f"{c['failed']} failed"]
        if c["in_progress"]:
            parts.append(f"{c['in_progress']} interrupted")
        if c["pending"]:
            parts.append(f"{c['pending']} not reached")
        lines = [f"{self.stamp()}  {head}: {len(self.items)} items, {', '.join(parts)} "
                 f"in {elapsed // 60}m{elapsed % 60:02d}s"]
        for it in self.items:
            if it.status == "failed":
                lines.append(f"  failed: {self.number[it.id]}. {it.content}" + (f" [{it.node}]" if it.node else ""))
        if error and failure.MARKER in error:
            lines += ["", *("  " + ln if ln.strip() else "" for ln in error.splitlines())]
        elif error:
            lines.append(f"  engine: {error}")
        return "\n".join(lines)
