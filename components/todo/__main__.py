"""python -m components.todo --stack STACK [--format FORMAT] [--up]

Runs a preview of STACK through the Automation API and prints its pending work as an ordered
todo list. With --up it prints the list, runs `up` and follows it live. Needs the engine
environment (`source scripts/env.sh`). --events replays a recorded preview without the engine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from components.backend import guard as team
from components.backend.locks import clear_dead, pulumi_locks
from components.backend.url import BackendError, backend_url, is_postgres
from components.config import ConfigError, load_stack_file
from components.config.load import PROJECT
from components.steps import failure
from components.todo import engine
from components.todo.interrupted import clear_stale_locks, lock_files, pending_operations, resume_interrupted
from components.todo.live import LiveTodo
from components.todo.plan import build_items, declared_steps, state_records, step_metadata, urn_name
from components.todo.status import benchmark_lines, stack_outputs, status
from components.todo.views import FORMATS, render


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m components.todo", description=__doc__.split("\n\n")[0])
    p.add_argument("--stack", required=True, help="stack name (stacks/Pulumi.<stack>.yaml)")
    p.add_argument("--format", default="text", choices=sorted(FORMATS),
                   help="text (default), markdown, json (the seeds' shape), json-full, mermaid, dot")
    p.add_argument("--up", action="store_true", help="then run `up` and follow the list live")
    p.add_argument("--work-dir", type=Path, default=engine.REPO, help="the project directory (default: this repo)")
    p.add_argument("--events", type=Path, help="render a recorded preview (a JSON list of engine events) "
                                               "instead of running one")
    p.add_argument("--plan", type=Path, help="with --events: the recorded plan file")
    p.add_argument("--steps", type=Path, help="with --events: the recorded steps file (what each step is)")
    p.add_argument("--record", type=Path, help="also write the preview's events.json, plan.json and "
                                               "steps.json (slimmed: no secrets) into this directory")
    p.add_argument("--verbose", action="store_true", help="with --up: the engine's other messages too")
    p.add_argument("--status", action="store_true", help="instead of the list: each deployment's health, last "
                                                       "benchmark and each node's memory (one read-only probe per node)")
    return p.parse_args(argv)


def load_spec(work_dir: Path, stack: str):
    path = work_dir / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        print(f"note: {path} not found; nodes are shown by host", file=sys.stderr)
        return None
    return load_stack_file(path)


class ErrorCollector:
    """Keeps the engine's error diagnostics, which say why a preview or an up failed better than
    the CLI's exit text does: a failed step's error as its block (components/steps/failure.py), or its
    first line (no quoted command line) and the last lines of its output; any other error whole
    (a rollback's report, which quotes the failed step's block: that block is then shown there
    alone)."""

    def __init__(self):
        self.errors: list[str] = []

    def __call__(self, event: dict) -> None:
        diag = event.get("diagnosticEvent") or {}
        if diag.get("severity") == "error":
            who = urn_name(diag["urn"]) if diag.get("urn") else ""
            message = str(diag.get("message", ""))
            found = failure.blocks(message) if failure.step_error(message) else []
            entries = found or [f"  {who}: {line.strip()}" if who else f"  {line.rstrip()}"
                                for line in failure.condense(message)]
            for entry in entries:
                if entry not in self.errors:
                    self.errors.append(entry)

    def explain(self, err: Exception) -> str:
        # The engine's closing "update failed" says nothing the steps' errors did not.
        errors = [e for e in self.errors if e.split(": ", 1)[-1].strip() != "update failed"] or self.errors
        lines = [e for e in errors if "\n" not in e]
        errors = [e for e in errors if "\n" not in e or not any(e.split("\n", 1)[0] in ln for ln in lines)]
        if errors:
            return "\n".join(("\n" + e + "\n") if e.startswith(failure.MARKER) else e for e in errors).strip("\n")
        lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
        picked = [ln for ln in lines if "error" in ln.lower()]
        return "\n".join("  " + ln for ln in (picked or lines)[-10:])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    backend = backend_url()
    if not (args.up and not args.events and is_postgres(backend)):
        return run(args)
    # A team backend: this run holds the stack from its preview to the end of its `up`, or stops
    # here naming who does (components/backend/guard.py).
    try:
        guard = team.acquire(backend, PROJECT, args.stack)
    except (team.StackBusy, BackendError) as err:
        print(str(err), file=sys.stderr)
        return 1
    with guard:
        for message in clear_dead(guard.conn, backend, PROJECT, args.stack, guard.previous):
            print(f"note: {message}", file=sys.stderr)
        return run(args, foreign_lock=bool(pulumi_locks(guard.conn, backend, PROJECT, args.stack)))


def run(args: argparse.Namespace, *, foreign_lock: bool = False) -> int:
    """One todo run; `foreign_lock`: a Pulumi lock of the stack that is not this run's (a team
    backend) is present, so the state is not this run's to edit."""
    try:
        spec = load_spec(args.work_dir, args.stack)
    except ConfigError as err:
        print(str(err), file=sys.stderr)
        return 1

    if args.status:
        if spec is None:
            return 1
        problem = engine.engine_env_ok()
        if problem:
            print(problem, file=sys.stderr)
            return 1
        try:
            outputs, secret = stack_outputs(args.stack, args.work_dir)
        except engine.NoSuchStack as err:
            print(str(err), file=sys.stderr)
            return 1
        sys.stdout.write(status(args.stack, spec, outputs, secret=secret))
        return 0

    if args.events:
        events = json.loads(args.events.read_text())
        plan = json.loads(args.plan.read_text()) if args.plan else None
        # Recorded events carry what the program's steps are; a steps file adds the last up's.
        steps = declared_steps(events, json.loads(args.steps.read_text()) if args.steps else None)
    else:
        problem = engine.engine_env_ok()
        if problem:
            print(problem, file=sys.stderr)
            return 1
        for message in clear_stale_locks(os.environ.get("PULUMI_BACKEND_URL", ""), PROJECT, args.stack):
            print(f"note: {message}", file=sys.stderr)
        errors = ErrorCollector()
        try:
            events, plan, previous = engine.preview(args.stack, args.work_dir, on_event=errors)
        except engine.NoSuchStack as err:
            print(str(err), file=sys.stderr)
            return 1
        except Exception as err:  # CommandError and friends: show the engine's words, not ours
            print(f"preview of stack {args.stack} failed:\n{errors.explain(err)}", file=sys.stderr)
            return 1
        if args.record:
            args.record.mkdir(parents=True, exist_ok=True)
            (args.record / "events.json").write_text(json.dumps(engine.slim_events(events), indent=1) + "\n")
            (args.record / "plan.json").write_text(json.dumps(engine.slim_plan(plan), indent=1) + "\n")
        steps = declared_steps(events, state_records(previous))
        interrupted = pending_operations(previous)
        if interrupted and not args.up:   # with --up, the line of resume_interrupted() below
            print("note: the last run was interrupted during these steps; `up` runs them again:\n  "
                  + "\n  ".join(interrupted), file=sys.stderr)
        if args.record:
            records = [info.record(urn) for urn, info in steps.items()]
            (args.record / "steps.json").write_text(json.dumps(records, indent=1) + "\n")
        if plan is None:
            print("note: the engine saved no plan file; dependencies are not shown", file=sys.stderr)

    items = build_items(step_metadata(events), plan, spec, steps)
    if not args.up:
        sys.stdout.write(render(items, args.format, args.stack))
        return 0

    if args.events:
        print("--up runs the engine; it cannot replay recorded events", file=sys.stderr)
        return 2
    sys.stdout.write(render(items, "text", args.stack))
    print(flush=True)
    # What a killed run left unfinished: resumed by this `up`, said in one line, and out of the
    # state so that the engine does not advise a `pulumi refresh` that does not apply.
    if not lock_files(os.environ.get("PULUMI_BACKEND_URL", ""), PROJECT, args.stack) and not foreign_lock:
        for message in resume_interrupted(args.stack, args.work_dir):
            print(f"note: {message}", file=sys.stderr, flush=True)
    live = LiveTodo(items, steps=steps, verbose=args.verbose)

    errors = ErrorCollector()

    def on_event(event: dict) -> None:
        errors(event)
        try:
            for line in live.handle(event):
                print(line, flush=True)
        except Exception as err:  # a display problem must never stop the deployment
            print(f"(todo display: {err})", file=sys.stderr, flush=True)

    error, result = None, None
    try:
        result = engine.up(args.stack, on_event, args.work_dir)
    except Exception as err:
        error = errors.explain(err).strip()
    outputs = {k: getattr(v, "value", v) for k, v in (getattr(result, "outputs", None) or {}).items()}
    print(live.summary(error), flush=True)
    for line in benchmark_lines(outputs):
        print(line, flush=True)
    if args.format != "text":
        sys.stdout.write(render(live.items, args.format, args.stack))
    return 1 if error or live.counts()["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
