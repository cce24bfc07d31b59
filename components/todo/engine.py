"""The Automation API side: select the stack, run a preview that saves its plan file, run an
`up`; engine events are handed on as plain dicts in the engine's wire format (camelCase), so
the rest of the package (and its tests) never depends on the SDK's event classes."""

from __future__ import annotations

import json
import os
import tempfile
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Mapping

from components.names import temp_prefix

REPO = Path(__file__).resolve().parents[2]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def wire(obj: Any) -> Any:
    """An SDK event object → the engine's JSON shape. Attribute names become camelCase; the keys
    of mappings (resource inputs, diffs) are the engine's own and stay as they are."""
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, Mapping):
        return {k: wire(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [wire(v) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if hasattr(obj, "__dict__"):
        return {_camel(k): wire(v) for k, v in vars(obj).items() if v is not None and not k.startswith("_")}
    return obj


class NoSuchStack(Exception):
    """The stack has a config file but was never created in this backend."""


def select(stack: str, work_dir: Path = REPO):
    from pulumi import automation as auto
    try:
        return auto.select_stack(stack_name=stack, work_dir=str(work_dir))
    except auto.StackNotFoundError:
        raise NoSuchStack(
            f"no stack named {stack!r} in this backend ({os.environ.get('PULUMI_BACKEND_URL', '?')}); "
            f"create it first (it keeps its config in stacks/Pulumi.{stack}.yaml and contacts no node):\n"
            f"  source scripts/env.sh && pulumi stack init {stack}") from None


def preview(stack: str, work_dir: Path = REPO, on_event: Callable[[dict], None] | None = None
            ) -> tuple[list[dict], dict | None, dict]:
    """Preview `stack`: (the engine events as dicts, the saved plan file or None, the state the
    last `up` left, as `pulumi stack export` gives it: what the steps being deleted were)."""
    st = select(stack, work_dir)
    previous = st.export_stack().deployment or {}
    events: list[dict] = []

    def collect(ev) -> None:
        d = wire(ev)
        events.append(d)
        if on_event is not None:
            on_event(d)

    with tempfile.TemporaryDirectory(prefix=temp_prefix("todo")) as tmp:
        plan_path = Path(tmp) / "plan.json"
        st.preview(on_event=collect, plan=str(plan_path), color="never")
        plan = json.loads(plan_path.read_text()) if plan_path.is_file() else None
    return events, plan, previous


def up(stack: str, on_event: Callable[[dict], None], work_dir: Path = REPO):
    """`pulumi up` of `stack`, every engine event handed to on_event as a dict."""
    st = select(stack, work_dir)
    return st.up(on_event=lambda ev: on_event(wire(ev)), color="never", show_secrets=False)


def slim_plan(plan: Mapping | None) -> dict | None:
    """Only what the todo list reads from a plan file (type, name, custom, parent,
    dependencies, steps): no inputs, no secrets. Used when recording fixtures."""
    if not plan:
        return plan
    keep = ("type", "name", "custom", "parent", "dependencies")
    return {"resourcePlans": {
        urn: {"goal": {k: (rp.get("goal") or {}).get(k) for k in keep if (rp.get("goal") or {}).get(k) is not None},
              "steps": rp.get("steps") or []}
        for urn, rp in (plan.get("resourcePlans") or {}).items()}}


def slim_events(events: list[Mapping]) -> list[dict]:
    """The resourcePreEvents of a preview with what plan.py reads (op, urn, type, diffs, the
    new/old parent, custom and inputs); secrets are already masked by the engine."""
    out = []
    for e in events:
        md = (e.get("resourcePreEvent") or {}).get("metadata")
        if not md:
            continue
        slim = {k: md[k] for k in ("op", "urn", "type", "diffs") if md.get(k) is not None}
        for side in ("old", "new"):
            if md.get(side):
                slim[side] = {k: md[side][k] for k in ("type", "urn", "parent", "custom", "inputs")
                              if md[side].get(k) is not None}
        out.append({"resourcePreEvent": {"metadata": slim}})
    return out


def engine_env_ok() -> str | None:
    """None when the engine can run here; else the fix."""
    from shutil import which
    if which("pulumi") is None:
        return "the pulumi CLI is not on PATH; fix: bash scripts/install-engine.sh && source scripts/env.sh"
    if not os.environ.get("PULUMI_BACKEND_URL"):
        return "PULUMI_BACKEND_URL is not set; fix: source scripts/env.sh"
    return None
