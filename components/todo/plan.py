"""Engine data → the ordered todo items.

Input, as plain JSON dicts (the engine's wire format, so recorded data and live data are alike):
- the `metadata` of each preview step (a `resourcePreEvent`): op, urn, type, old/new state
  (parent, custom, inputs), diffs;
- optionally the saved plan file (`pulumi preview --save-plan`): each resource's goal with its
  `parent` and `dependencies`, which gives the graph;
- what each step is (components/steps/info.py), by URN: the Node components' outputs in the
  preview's events, and for steps being deleted, those the last `up` left in the state.

One item per pending custom resource (remote.Command, local.Command, …); `same` steps, component
resources, providers and the stack itself are skipped. Items are ordered by a topological sort
of their dependencies that, among the items ready at each point, takes the earliest phase
(preflight, retire, image, model, cluster, serve, verify), then the node's place in the stack config, then
the item's id: the same stack gives the same list every time.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping

from components.config.schema import StackSpec
from components.steps.info import STEPS_OUTPUT, StepInfo, index
from components.steps.remote import drift_reason
from components.todo import unit_diff
from components.todo.describe import PHASES, describe

_REPLACE_OPS = {"replace", "create-replacement", "delete-replaced", "discard-replaced"}
_SKIP_OPS = {"same", "read", "refresh", "read-discard", "remove-pending-replace"}


@dataclass
class Item:
    id: str
    content: str
    priority: str
    status: str
    node: str | None
    phase: str
    reason: str
    depends_on: list[str] = field(default_factory=list)
    urn: str = ""

    def seed(self) -> dict:
        """The seeds' shape: exactly content, priority, status."""
        return {"content": self.content, "priority": self.priority, "status": self.status}

    def full(self) -> dict:
        return asdict(self)


# -- URNs ------------------------------------------------------------------------------------

def urn_types(urn: str) -> tuple[str, ...]:
    """urn:pulumi:STACK::PROJECT::T1$T2$T3::NAME → (T1, T2, T3)."""
    parts = urn.split("::")
    return tuple(parts[2].split("$")) if len(parts) >= 4 else ()


def urn_name(urn: str) -> str:
    parts = urn.split("::")
    return "::".join(parts[3:]) if len(parts) >= 4 else urn


def is_work(type_token: str, custom: bool | None) -> bool:
    """A resource that does something on a node: custom, and neither a provider nor the stack."""
    if type_token.startswith("pulumi:providers:") or type_token == "pulumi:pulumi:Stack":
        return False
    if custom is None:
        return not type_token.startswith("blackwell:")
    return bool(custom)


# -- steps -----------------------------------------------------------------------------------

@dataclass
class Step:
    """All preview steps of one URN, merged (a replace shows as several steps)."""
    urn: str
    type: str
    ops: list[str]
    parent: str | None
    custom: bool | None
    inputs: dict
    diffs: list[str]
    old_inputs: dict = field(default_factory=dict)

    @property
    def op(self) -> str:
        if any(o in _REPLACE_OPS for o in self.ops):
            return "replace"
        for o in ("create", "update", "delete"):
            if o in self.ops:
                return o
        return self.ops[0] if self.ops else "same"

    @property
    def pending(self) -> bool:
        return any(o not in _SKIP_OPS for o in self.ops)


def merge_steps(metadata: Iterable[Mapping]) -> list[Step]:
    """Step metadata dicts (from resourcePreEvents), merged per URN, in the engine's order."""
    steps: dict[str, Step] = {}
    for md in metadata:
        urn = md.get("urn", "")
        new, old = md.get("new") or {}, md.get("old") or {}
        state = new or old
        s = steps.get(urn)
        if s is None:
            s = steps[urn] = Step(urn=urn, type=md.get("type") or state.get("type", ""), ops=[],
                                  parent=state.get("parent") or None, custom=state.get("custom"),
                                  inputs=dict(state.get("inputs") or {}), diffs=[],
                                  old_inputs=dict(old.get("inputs") or {}))
        op = md.get("op", "same")
        if op not in s.ops:
            s.ops.append(op)
        if new and not s.inputs:
            s.inputs = dict(new.get("inputs") or {})
        if old and not s.old_inputs:
            s.old_inputs = dict(old.get("inputs") or {})
        s.parent = s.parent or state.get("parent") or None
        if s.custom is None:
            s.custom = state.get("custom")
        diffs = md.get("diffs") or list((md.get("detailedDiff") or {}).keys())
        for d in diffs:
            top = str(d).split(".")[0].split("[")[0]
            if top not in s.diffs:
                s.diffs.append(top)
    return list(steps.values())


# What an input's change means, in the todo list's words: the command line names the script's
# digest and its triggers, stdin carries the script and its data.
_CHANGED = {"create": "script", "stdin": "script", "delete": "undo script", "connection": "connection"}
# How the engine shows, during a preview, a value not known before another step runs.
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
# How a secret value shows: masked in engine events, its signature in a plan file.
SECRET_SIG = "4dabf18193072939515e22adb298388d"
# A command line's parts that follow its scripts' text (their digest, their offsets on stdin).
_SCRIPT_REFS = re.compile(r"BWS_SCRIPT=\w+|head -c \d+")


def is_secret(value: object) -> bool:
    return value == "[secret]" or (isinstance(value, Mapping) and SECRET_SIG in value)


def unit_changes(step: Step) -> tuple[list[str], set[str]]:
    """What changed in the unit an install step writes (components/todo/unit_diff.py), and the
    diffs that change accounts for: stdin when the rest of the script is the same, a command line
    that differs only in its scripts' digest and offsets."""
    if "stdin" not in step.diffs:
        return [], set()
    old, new = step.old_inputs.get("stdin"), step.inputs.get("stdin")
    found = unit_diff.changes(old, new)
    if not found:
        return [], set()
    explained = {"stdin"} if unit_diff.script_around(old) == unit_diff.script_around(new) else set()
    for key in ("create", "delete"):
        was, now = step.old_inputs.get(key), step.inputs.get(key)
        if isinstance(was, str) and isinstance(now, str) and now != UNKNOWN \
                and _SCRIPT_REFS.sub("", was) == _SCRIPT_REFS.sub("", now):
            explained.add(key)
    return found, explained


def reason_of(step: Step) -> str:
    """create | delete | "update: script changed" | what changed in the unit an install step
    writes ("update: --max-model-len 32768 → 65536, env VLLM_X: a → b") | "update: secret or
    script changed" (a step whose stdin is a secret: its value is never shown) | "update: takes
    an earlier step's output" (its command line names a trigger another pending step gives, e.g.
    a gate after the start of the unit it checks) | what the program observed on the node
    ("drift: observed inactive", "unreachable: …"), or both."""
    op = step.op
    observed = (drift_reason(step.inputs.get("environment"))
                if op != "delete" and "environment" in step.diffs else "")
    fed = "create" in step.diffs and step.inputs.get("create") == UNKNOWN
    in_unit, explained = unit_changes(step)
    secret = is_secret(step.inputs.get("stdin"))
    words = dict(_CHANGED, **({"stdin": "secret or script", "create": "secret or script"} if secret else {}))
    changed = list(dict.fromkeys(words.get(d, d) for d in step.diffs
                                 if d != "environment" and d not in explained and not (fed and d == "create")))
    if op in ("update", "replace"):
        why = [*([unit_diff.summary(in_unit)] if in_unit else []),
               *([f"{', '.join(changed)} changed"] if changed else []),
               *(["takes an earlier step's output"] if fed else [])]
        return "; ".join(p for p in (f"{op}: {', '.join(why)}" if why else "", observed) if p) or op
    return op


def step_metadata(events: Iterable[Mapping]) -> list[dict]:
    """The step metadata of the resourcePreEvents among engine event dicts."""
    return [e["resourcePreEvent"]["metadata"] for e in events
            if isinstance(e.get("resourcePreEvent"), Mapping) and e["resourcePreEvent"].get("metadata")]


def declared_steps(events: Iterable[Mapping], previous: Iterable | None = None) -> dict[str, StepInfo]:
    """urn → StepInfo: from the STEPS_OUTPUT outputs of the components in the preview's events
    (the steps of this program), over `previous` (the records the last `up` left in the state,
    state_records(); the steps being deleted are only there)."""
    out = index(list(previous or []))
    for e in events:
        for kind in ("resOutputsEvent", "resourcePreEvent"):
            md = (e.get(kind) or {}).get("metadata") or {}
            outputs = (md.get("new") or {}).get("outputs")
            if isinstance(outputs, Mapping) and STEPS_OUTPUT in outputs:
                out.update(index(outputs[STEPS_OUTPUT]))
    return out


def state_records(deployment: Mapping) -> list:
    """The STEPS_OUTPUT records of every resource of an exported state (`pulumi stack export`)."""
    records: list = []
    for res in deployment.get("resources") or []:
        value = (res.get("outputs") or {}).get(STEPS_OUTPUT)
        if isinstance(value, list):
            records += value
    return records


# -- the graph -------------------------------------------------------------------------------

def plan_goals(plan: Mapping | None) -> dict[str, dict]:
    """urn → goal of a saved plan file (resources being deleted have no goal)."""
    if not plan:
        return {}
    return {urn: (rp.get("goal") or {}) for urn, rp in (plan.get("resourcePlans") or {}).items()}


def _dependencies(item_urns: set[str], goals: Mapping[str, Mapping], steps: Mapping[str, Step]) -> dict[str, list[str]]:
    """For each item: the items it waits for. A dependency on a component means its descendants
    that are items; a dependency on a resource that is not pending is followed through to what
    that one waits for, so an order through unchanged resources is kept."""
    children: dict[str, list[str]] = {}
    for urn, goal in goals.items():
        if goal.get("parent"):
            children.setdefault(goal["parent"], []).append(urn)
    for urn, s in steps.items():
        if s.parent and urn not in goals:
            children.setdefault(s.parent, []).append(urn)

    def expand(urn: str, seen: set[str]) -> set[str]:
        if urn in seen:
            return set()
        seen.add(urn)
        if urn in item_urns:
            return {urn}
        goal = goals.get(urn, {})
        out: set[str] = set()
        custom = goal.get("custom") if goal else (steps[urn].custom if urn in steps else None)
        if custom is False or urn in children and custom is None:
            for c in children.get(urn, []):
                out |= expand(c, seen)
        else:
            for d in goal.get("dependencies") or []:
                out |= expand(d, seen)
        return out

    deps: dict[str, list[str]] = {}
    for urn in item_urns:
        found: set[str] = set()
        for d in goals.get(urn, {}).get("dependencies") or []:
            found |= expand(d, {urn})
        found.discard(urn)
        deps[urn] = sorted(found)
    return deps


def _unique_ids(urns: list[str]) -> dict[str, str]:
    ids: dict[str, str] = {}
    used: set[str] = set()
    for urn in urns:
        base = urn_name(urn)
        candidate, i = base, 2
        while candidate in used:
            candidate, i = f"{base}-{i}", i + 1
        used.add(candidate)
        ids[urn] = candidate
    return ids


def order(items: list[Item], node_order: Mapping[str, int]) -> list[Item]:
    """Topological by depends_on; among ready items the earliest phase, then node, then id (not
    the engine's event order: steps register concurrently, so two previews of one stack would
    list ties differently). An (impossible) cycle is broken rather than dropped."""
    by_id = {it.id: it for it in items}
    waiting = {it.id: {d for d in it.depends_on if d in by_id} for it in items}
    dependents: dict[str, list[str]] = {}
    for it in items:
        for d in waiting[it.id]:
            dependents.setdefault(d, []).append(it.id)

    def key(it: Item):
        phase = PHASES.index(it.phase) if it.phase in PHASES else len(PHASES)
        return (phase, node_order.get(it.node or "", len(node_order)), it.id)

    ready = [(key(it), it.id) for it in items if not waiting[it.id]]
    heapq.heapify(ready)
    out: list[Item] = []
    done: set[str] = set()
    while len(out) < len(items):
        if not ready:  # a cycle: take the first of what is left
            rest = sorted((key(by_id[i]), i) for i in by_id if i not in done)
            ready = [rest[0]]
        _, iid = heapq.heappop(ready)
        if iid in done:
            continue
        done.add(iid)
        out.append(by_id[iid])
        for nxt in dependents.get(iid, []):
            waiting[nxt].discard(iid)
            if not waiting[nxt] and nxt not in done:
                heapq.heappush(ready, (key(by_id[nxt]), nxt))
    return out


def item_for(step: Step, item_id: str, steps: Mapping[str, StepInfo]) -> Item:
    d = describe(steps.get(step.urn), step.op, urn_name(step.urn))
    return Item(id=item_id, content=d.content, priority=d.priority, status="pending", node=d.node,
                phase=d.phase, reason=reason_of(step), urn=step.urn)


def build_items(metadata: Iterable[Mapping], plan: Mapping | None = None,
                spec: StackSpec | None = None, steps: Mapping[str, StepInfo] | None = None) -> list[Item]:
    """The ordered todo items of a preview: step metadata dicts, the saved plan (optional: without
    it there are no dependencies), the stack config (optional: orders the nodes) and what each
    step is (declared_steps)."""
    steps = steps or {}
    merged = {s.urn: s for s in merge_steps(metadata)}
    goals = plan_goals(plan)
    work = [s for s in merged.values()
            if s.pending and is_work(s.type or (urn_types(s.urn) or ("",))[-1],
                                     goals[s.urn].get("custom") if s.urn in goals else s.custom)]
    ids = _unique_ids([s.urn for s in work])
    items = [item_for(s, ids[s.urn], steps) for s in work]
    deps = _dependencies({s.urn for s in work}, goals, merged)
    for it in items:
        it.depends_on = sorted(ids[u] for u in deps.get(it.urn, []))
    node_order = {n.name: i for i, n in enumerate(spec.nodes)} if spec is not None else {}
    ordered = order(items, node_order)
    position = {it.id: i for i, it in enumerate(ordered)}
    for it in ordered:
        it.depends_on.sort(key=position.__getitem__)
    return ordered
