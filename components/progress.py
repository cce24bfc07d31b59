"""Progress of long steps while they run: which output lines of a script are worth showing (its
`[blackwell …]` log lines, a pv/rsync percentage at each new tenth, docker's load and build
headers), and the channel that streams them to the engine during `pulumi up` so that the CLI
and the todo view show them live, not only when the step has ended."""

from __future__ import annotations

import re
import sys
import threading
from typing import Callable

TAGGED = re.compile(r"^\[blackwell ([^\]]+)\] (.*)$")
_PERCENT = re.compile(r"(?<![\d.])(\d{1,3})%")
_NOTABLE = re.compile(r"^(Loaded image|#\d+ \[|Step \d+/\d+|Successfully (built|tagged))")
# An engine message of a step: "<resource name> on <node>: <line>" (the todo view reads it back).
STEP_MESSAGE = re.compile(r"^(\S+) on (\S+): (.*)$", re.S)


class ProgressFilter:
    """One step's output, line by line → the lines to show, or None to stay quiet."""

    def __init__(self) -> None:
        self._shown_tenth = -1

    def accept(self, line: str) -> str | None:
        tagged = TAGGED.match(line)
        if tagged:
            return f"[{tagged.group(1)}] {tagged.group(2)}"
        percent = _PERCENT.search(line)
        if percent:
            value = int(percent.group(1))
            if value <= 100 and value // 10 > self._shown_tenth:
                self._shown_tenth = value // 10
                return line
            return None
        if _NOTABLE.match(line):
            return line
        return None


def split_lines(buffer: str) -> tuple[list[str], str]:
    """Complete lines of a growing buffer (a carriage return ends one too, as pv writes) and the
    rest, still incomplete."""
    parts = re.split(r"[\r\n]", buffer)
    return [p.strip() for p in parts[:-1] if p.strip()], parts[-1]


_engine_lock = threading.Lock()
_engine_stub = None


def engine_log(message: str) -> None:
    """An info message to the engine, from inside the provider process (the engine gives its
    address as the plugin's first argument). Anywhere else, or if the engine is gone, a no-op:
    progress is never worth failing a step for."""
    global _engine_stub
    try:
        with _engine_lock:
            if _engine_stub is None:
                address = sys.argv[1] if len(sys.argv) > 1 and re.match(r"^[\w.\[\]:-]+:\d+$", sys.argv[1]) else None
                if address is None:
                    return
                import grpc
                from pulumi.runtime.proto import engine_pb2_grpc
                _engine_stub = engine_pb2_grpc.EngineStub(grpc.insecure_channel(address))
        from pulumi.runtime.proto import engine_pb2
        _engine_stub.Log(engine_pb2.LogRequest(severity=engine_pb2.INFO, message=message), timeout=5)
    except Exception:  # noqa: BLE001 — see the docstring
        pass


def step_reporter(label: str, send: Callable[[str], None] = engine_log) -> Callable[[str], None]:
    """A callback for each output line of the step `label` ("<name> on <node>")."""
    keep = ProgressFilter()

    def on_line(line: str) -> None:
        shown = keep.accept(line)
        if shown:
            send(f"{label}: {shown}")
    return on_line
