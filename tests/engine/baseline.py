"""A converged state of a hardware stack, made offline: what a finished `up` would have left,
written from the engine's own saved plans and imported with `pulumi stack import`, so that a
later preview of a changed stack config shows only that change (no node is ever contacted: an
`up` of these stacks needs the machines, and offline mode refuses it).

Each round previews with `--save-plan`, turns every planned resource into a state entry (its
planned outputs; every step's stdout gives the `key=value` lines the program reads from steps:
an image ID, a unit's start, an env file's generation…) and imports it; values the first
round could not know (a command line naming an image ID) are known in the next. The rounds end
when the preview plans nothing."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.engine.conftest import pulumi

UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
# What every step "printed" in the baseline: each key a step's output is read from.
STDOUT = "".join(f"{k}=baseline-{k}\n" for k in ("image-id", "started", "generation", "venv-id", "bus-gbps"))
CHANGES = ("create", "update", "replace", "create-replacement", "delete", "delete-replaced")


def _known(value):
    """A planned value with every unknown part replaced by a placeholder."""
    if value == UNKNOWN:
        return "baseline-unknown"
    if isinstance(value, dict):
        return {k: _known(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_known(v) for v in value]
    return value


def _entry(urn: str, plan: dict, provider_ids: dict[str, str]) -> dict:
    goal, state = plan["goal"], _known(plan.get("state") or {})
    entry = {"urn": urn, "custom": goal["custom"], "type": goal["type"]}
    if goal.get("parent"):
        entry["parent"] = goal["parent"]
    if goal["type"].startswith("pulumi:providers:"):
        entry.update(id=provider_ids[urn], inputs=_known((goal.get("inputDiff") or {}).get("adds") or {}),
                     outputs=state)
        return entry
    if goal["custom"]:
        inputs = {k: v for k, v in state.items() if k not in ("stdout", "stderr")}
        provider_urn = goal["provider"].rsplit("::", 1)[0]
        entry.update(id=str(uuid.uuid5(uuid.NAMESPACE_URL, urn)), inputs=inputs,
                     outputs={**inputs, "stdout": STDOUT, "stderr": ""},
                     provider=f"{provider_urn}::{provider_ids[provider_urn]}")
        for key in ("dependencies", "propertyDependencies", "additionalSecretOutputs"):
            if goal.get(key):
                entry[key] = goal[key]
    else:
        entry["outputs"] = state
    return entry


def _ordered(entries: dict[str, dict]) -> list[dict]:
    """Parents, providers and dependencies before what refers to them (the state's order)."""
    out: list[dict] = []
    seen: set[str] = set()

    def visit(urn: str) -> None:
        if urn in seen or urn not in entries:
            return
        seen.add(urn)
        e = entries[urn]
        refs = [e.get("parent"), (e.get("provider") or "").rsplit("::", 1)[0], *(e.get("dependencies") or [])]
        for ref in refs:
            if ref:
                visit(ref)
        out.append(e)

    for urn in entries:
        visit(urn)
    return out


def converge(project: Path, stack: str, env: dict, rounds: int = 6) -> None:
    """Give `stack` (already initialised) the state a finished `up` would leave."""
    provider_ids: dict[str, str] = {}
    for _ in range(rounds):
        plan_file = project.parent / f"baseline-plan-{stack}.json"
        run = pulumi(project, "preview", "--stack", stack, "--json", "--save-plan", str(plan_file), env=env)
        assert run.returncode == 0, f"baseline preview failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
        if not any(s["op"] in CHANGES for s in json.loads(run.stdout).get("steps", [])):
            return
        plans = json.loads(plan_file.read_text())["resourcePlans"]
        for urn, p in plans.items():
            if p["goal"]["type"].startswith("pulumi:providers:"):
                provider_ids.setdefault(urn, str(uuid.uuid4()))
        exported = pulumi(project, "stack", "export", "--stack", stack, env=env)
        assert exported.returncode == 0, exported.stderr
        doc = json.loads(exported.stdout)
        doc["deployment"]["resources"] = _ordered({urn: _entry(urn, p, provider_ids) for urn, p in plans.items()})
        state_file = project.parent / f"baseline-state-{stack}.json"
        state_file.write_text(json.dumps(doc))
        imported = pulumi(project, "stack", "import", "--stack", stack, "--file", str(state_file), env=env)
        assert imported.returncode == 0, imported.stderr
    raise AssertionError(f"stack {stack}: the baseline did not converge in {rounds} rounds")
