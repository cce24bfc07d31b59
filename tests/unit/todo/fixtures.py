"""Hand-written engine data for the todo tests, in the engine's wire format: the step metadata
of resourcePreEvents, the stack output that says what each step is (a resOutputsEvent of the
stack with outputs["todo_steps"]), the outputs the last `up` left, and a saved plan file
(goal.parent, goal.dependencies), for the `lab` stack (data/Pulumi.lab.yaml) as
components/serving/stack.py wires it. The table COMMANDS below is the whole graph, with the StepInfo
each component declares; test_fixtures.py holds it against the real program built under mocks.
Small functions turn it into events and a plan, so each test can change one row."""

from __future__ import annotations

import copy
from typing import NamedTuple

from components.steps.remote import DELETE_TIMEOUT_S, DRIFT_VAR, command_line
from components.steps.info import STEPS_OUTPUT, StepInfo

PREFIX = "urn:pulumi:lab::blackwell-serving::"
STACK_TYPE = "pulumi:pulumi:Stack"
STACK_URN = f"{PREFIX}{STACK_TYPE}::blackwell-serving-lab"
ROOT = "blackwell:stack:ServingStack"
# One default provider of the command package serves remote.Command and local.Command alike.
PROVIDER = f"{PREFIX}pulumi:providers:command::default_1_2_1"
PROVIDER_REF = PROVIDER + "::04da6b54-80e4-46f7-96ec-b56ff0331ba9"
# A secret input as the engine shows it in events: the signature and a masked ciphertext.
SECRET = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "[secret]"}
STAMP = "2025-12-02T11:00:00.123456Z"

# Components: name → (type, parent component name or None for the stack component). A `#`
# tells apart two components of the same name (the model tiny and the deployment tiny).
COMPONENTS = {
    "lab": (ROOT, None),
    "lab-1": ("blackwell:node:Node", "lab"),
    "lab-2": ("blackwell:node:Node", "lab"),
    "lab-2-embeddings": ("blackwell:services:KeptService", "lab"),
    "vllm-lab": ("blackwell:image:ContainerImage", "lab"),
    "vllm-lab-sync": ("blackwell:image:ImageSync", "lab"),
    "tiny": ("blackwell:model:ModelCache", "lab"),
    "tiny-preflight": ("blackwell:preflight:EngineProbe", "lab"),
    "lab-1-fabric": ("blackwell:preflight:FabricCheck", "lab"),
    "lab-2-fabric": ("blackwell:preflight:FabricCheck", "lab"),
    "lab-1-resources": ("blackwell:preflight:NodeResources", "lab"),
    "lab-2-resources": ("blackwell:preflight:NodeResources", "lab"),
    "lab-1-glm": ("blackwell:services:RetiredService", "lab"),
    "tiny-ray": ("blackwell:cluster:RayCluster", "lab"),
    "tiny-ray-head-lab-1": ("blackwell:unit:SystemdUnit", "tiny-ray"),
    "tiny-ray-worker-lab-2": ("blackwell:unit:SystemdUnit", "tiny-ray"),
    "tiny#deployment": ("blackwell:deployment:Deployment", "lab"),
    "tiny-lab-1": ("blackwell:unit:SystemdUnit", "tiny#deployment"),
    "tiny-watchdog": ("blackwell:deployment:Watchdog", "tiny#deployment"),
}


class Cmd(NamedTuple):
    """One step: kind "remote" (command:remote:Command, a script on the node) or "local"
    (command:local:Command, on the operator's machine); its component; what the component
    declared it is; the steps it waits for (its registered dependencies), by name."""
    kind: str
    parent: str
    step: StepInfo
    deps: tuple[str, ...] = ()


# What gates every change: the preflight checks (components/serving/stack.py).
GATES = ("lab-1-fabric-check", "lab-2-fabric-check", "lab-1-resources-check", "lab-2-resources-check",
         "tiny-preflight-engine")
IMAGE = ("vllm-lab-build", "vllm-lab-sync-lab-2")

# Commands, in the order the program registers them.
COMMANDS: dict[str, Cmd] = {
    "lab-2-embeddings-check": Cmd("remote", "lab-2-embeddings", StepInfo(
        "lab-2", "verify", priority="normal", do="Check that embeddings.service stays up on lab-2 (never touched)",
        undo="Stop checking embeddings.service on lab-2")),
    "vllm-lab-build": Cmd("remote", "vllm-lab", StepInfo(
        "lab-1", "image", do="Build image vllm-lab on lab-1 (transformers>=5)", undo="Remove image vllm-lab from lab-1")),
    "tiny-upload": Cmd("local", "tiny", StepInfo(
        "lab-1", "model", do="Upload model tiny from this machine to lab-1",
        undo="Forget the upload of model tiny to lab-1")),
    "lab-1-fabric-check": Cmd("remote", "lab-1-fabric", StepInfo(
        "lab-1", "preflight", do="Preflight: the fabric link of lab-1 is up (address, MTU, RDMA ports, peers)",
        undo="Drop the fabric check of lab-1")),
    "lab-2-fabric-check": Cmd("remote", "lab-2-fabric", StepInfo(
        "lab-2", "preflight", do="Preflight: the fabric link of lab-2 is up (address, MTU, RDMA ports, peers)",
        undo="Drop the fabric check of lab-2")),
    # The lab's nodes are gpu.kind cpu: their check says "no GPU expected" and reports the memory.
    **{f"{n}-resources-check": Cmd("remote", f"{n}-resources", StepInfo(
        n, "preflight", do=f"Preflight: {n} has no GPU and none is expected (gpu.kind cpu); its memory reported "
                           "against its deployments' claim of 6.9 GB, not enforced",
        undo=f"Drop the GPU and memory check of {n}")) for n in ("lab-1", "lab-2")},
    "tiny-fetch": Cmd("remote", "tiny", StepInfo(
        "lab-1", "model", do="Hash and install model tiny on lab-1", undo="Remove model tiny from lab-1"),
        ("tiny-upload",)),
    "vllm-lab-sync-lab-2": Cmd("remote", "vllm-lab-sync", StepInfo(
        "lab-1", "image", do="Copy image vllm-lab to lab-2 over the fabric", undo="Remove image vllm-lab from lab-2"),
        ("vllm-lab-build",)),
    "tiny-to-lab-2": Cmd("remote", "tiny", StepInfo(
        "lab-1", "model", do="Copy model tiny to lab-2 over the fabric", undo="Remove model tiny from lab-2",
        redo="Copy model tiny to lab-2 again over the fabric (then the engines reading it there restart)"),
        ("tiny-fetch",)),
    "tiny-preflight-engine": Cmd("remote", "tiny-preflight", StepInfo(
        "lab-1", "preflight", do="Preflight: the engine image of tiny knows its model and takes its flags (probe on lab-1)",
        undo="Drop the engine probe of tiny"),
        ("vllm-lab-build", "tiny-fetch")),
    "lab-1-glm-retire": Cmd("remote", "lab-1-glm", StepInfo(
        "lab-1", "retire", do="Stop and disable glm.service on lab-1", undo="Start glm.service again on lab-1 (restore)"),
        GATES),
    "tiny-ray-head-lab-1-install": Cmd("remote", "tiny-ray-head-lab-1", StepInfo(
        "lab-1", "cluster", do="Start Ray head on lab-1", redo="Restart Ray head on lab-1 with its new unit",
        undo="Stop Ray head on lab-1"),
        (*IMAGE, *GATES, "lab-1-glm-retire")),
    "tiny-ray-worker-lab-2-install": Cmd("remote", "tiny-ray-worker-lab-2", StepInfo(
        "lab-2", "cluster", do="Start Ray worker on lab-2", redo="Restart Ray worker on lab-2 with its new unit",
        undo="Stop Ray worker on lab-2"),
        (*IMAGE, *GATES, "lab-1-glm-retire", "tiny-ray-head-lab-1-install")),
    "tiny-ray-ready": Cmd("remote", "tiny-ray", StepInfo(
        "lab-1", "cluster", do="Wait until every node has joined Ray cluster tiny-ray",
        undo="Forget the readiness check of Ray cluster tiny-ray"),
        ("tiny-ray-head-lab-1-install", "tiny-ray-worker-lab-2-install")),
    "tiny-lab-1-env": Cmd("remote", "tiny-lab-1", StepInfo(
        "lab-1", "serve", do="Write the secret environment of bws-tiny.service on lab-1",
        redo="Rewrite the secret environment of bws-tiny.service on lab-1 (then it restarts)",
        undo="Remove the secret environment of bws-tiny.service from lab-1"),
        (*IMAGE, "tiny-fetch", "tiny-to-lab-2", *GATES, "lab-1-glm-retire", "tiny-ray-ready")),
    "tiny-lab-1-install": Cmd("remote", "tiny-lab-1", StepInfo(
        "lab-1", "serve", do="Install and start bws-tiny.service on lab-1",
        redo="Rewrite bws-tiny.service on lab-1 and restart it if what it runs changed",
        undo="Stop and remove bws-tiny.service from lab-1"),
        # and every Ray unit's start: a restart of one restarts the engine after it
        (*IMAGE, "tiny-fetch", "tiny-to-lab-2", *GATES, "lab-1-glm-retire", "tiny-ray-ready", "tiny-lab-1-env",
         "tiny-ray-head-lab-1-install", "tiny-ray-worker-lab-2-install")),
    "tiny-health": Cmd("remote", "tiny#deployment", StepInfo(
        "lab-1", "verify", do="Health gate: a real chat completion from tiny", undo="Drop the health gate of tiny"),
        ("tiny-ray-head-lab-1-install", "tiny-ray-worker-lab-2-install", "tiny-lab-1-env", "tiny-lab-1-install")),
    "tiny-watchdog-timer": Cmd("remote", "tiny-watchdog", StepInfo(
        "lab-1", "verify", do="Arm the watchdog of tiny: a completion every 30 s, a restart after 3 failures in a row",
        undo="Disarm the watchdog of tiny on lab-1", priority="normal"),
        ("tiny-health",)),
}

# With fabric.bandwidth_check set, one more preflight step, which gates everything too.
BANDWIDTH = "tiny-bandwidth-check"


def with_bandwidth_check() -> tuple[dict, dict[str, Cmd]]:
    """(COMPONENTS, COMMANDS) of the lab with fabric.bandwidth_check set: its step after the image
    and the model are on both nodes and the links are up; then a gate of every change."""
    components = {**COMPONENTS, "tiny-bandwidth": ("blackwell:preflight:FabricBandwidth", "lab")}
    check = Cmd("remote", "tiny-bandwidth", StepInfo(
        "lab-1", "preflight", do="Preflight: measure the fabric's all-reduce bandwidth between lab-1 and lab-2 (gloo)",
        undo="Drop the fabric bandwidth check of tiny"),
        (*IMAGE, "tiny-fetch", "tiny-to-lab-2", "lab-1-fabric-check", "lab-2-fabric-check"))
    commands: dict[str, Cmd] = {}
    for name, cmd in COMMANDS.items():
        if "tiny-preflight-engine" in cmd.deps and name != BANDWIDTH:
            cmd = cmd._replace(deps=(*cmd.deps, BANDWIDTH))
        commands[name] = cmd
        if name == "tiny-preflight-engine":
            commands[BANDWIDTH] = check
    return components, commands


# -- URNs and states ---------------------------------------------------------------------------

def _chain(component: str | None) -> list[str]:
    types = []
    while component is not None:
        ctype, parent = COMPONENTS[component]
        types.insert(0, ctype)
        component = parent
    return types


def command_type(name: str) -> str:
    return f"command:{COMMANDS[name].kind}:Command"


def component_urn(component: str) -> str:
    return f"{PREFIX}{'$'.join(_chain(component))}::{component.split('#')[0]}"


def command_urn(name: str) -> str:
    return f"{PREFIX}{'$'.join(_chain(COMMANDS[name].parent) + [command_type(name)])}::{name}"


def scripts(name: str) -> tuple[str, str]:
    """(create, delete) script texts of a remote step (their content does not matter here)."""
    head = "#!/usr/bin/env bash\nset -euo pipefail\n"
    return f"{head}# converge {name}\ntrue\n", f"{head}# undo {name}\ntrue\n"


def command_state(name: str, drift: str | None = None) -> dict:
    """The state of a step as the engine shows it in an event: the connection a secret, the
    command line in `create` (the script travels in stdin), `environment` only with drift (the
    program's observation, stamped)."""
    cmd = COMMANDS[name]
    label = f"{name} on {cmd.step.node}"
    if cmd.kind == "remote":
        create, delete = scripts(name)
        inputs = {"connection": SECRET,
                  "create": command_line(label=label, lock=label, scripts=[create, delete], which=0, timeout_s=4 * 3600),
                  "delete": command_line(label=f"{label} (delete)", lock=label, scripts=[create, delete], which=1,
                                         timeout_s=DELETE_TIMEOUT_S),
                  "stdin": create + delete, "addPreviousOutputInEnv": False, "logging": "stderr"}
    else:
        inputs = {"create": f"#!/usr/bin/env bash\n# {label}: rsync the model directory\ntrue\n",
                  "interpreter": ["ssh-agent", "/bin/bash", "-c"], "stdin": SECRET,
                  "addPreviousOutputInEnv": False, "logging": "stderr"}
    if drift is not None:
        inputs["environment"] = {DRIFT_VAR: f"{drift} (observed {STAMP})"}
    return {"type": command_type(name), "urn": command_urn(name), "custom": True, "id": "",
            "parent": component_urn(cmd.parent), "provider": PROVIDER_REF, "inputs": inputs, "outputs": {}}


def component_state(component: str) -> dict:
    """As the real engine shows a component in a step: no `custom` key (it is false)."""
    ctype, parent = COMPONENTS[component]
    return {"type": ctype, "urn": component_urn(component),
            "parent": component_urn(parent) if parent else STACK_URN, "inputs": {}, "outputs": {}}


# -- what each step is -------------------------------------------------------------------------

def step_records(names=None) -> list[dict]:
    """STEPS_OUTPUT records (components/steps/info.py) of each named step (default: every one)."""
    return [COMMANDS[n].step.record(command_urn(n)) for n in (COMMANDS if names is None else names)]


def node_outputs_event(records, op: str = "create", node: str = "lab-1") -> dict:
    """A Node component's resOutputsEvent of a preview, carrying STEPS_OUTPUT (components/resources/node.py)."""
    urn = component_urn(node)
    state = {"type": "blackwell:node:Node", "urn": urn, "parent": component_urn("lab"), "inputs": {},
             "outputs": {"host": {"lab-1": "198.18.0.11", "lab-2": "198.18.0.12"}[node], "arch": "amd64",
                         STEPS_OUTPUT: records}}
    return {"sequence": 0, "timestamp": 0,
            "resOutputsEvent": {"metadata": {"op": op, "urn": urn, "type": "blackwell:node:Node", "provider": "",
                                             "new": state}, "planning": True}}


def previous_records(names=None) -> list[dict]:
    """The records the last `up` left in the state (plan.state_records of `pulumi stack export`)."""
    return step_records(names)


def previous_deployment(names=None) -> dict:
    """The state the last `up` left, as `pulumi stack export` gives it (engine.preview's third value):
    the records in the Node components' outputs."""
    return {"resources": [{"urn": component_urn("lab-1"), "type": "blackwell:node:Node",
                           "outputs": {"host": "198.18.0.11", STEPS_OUTPUT: step_records(names)}},
                          {"urn": STACK_URN, "type": STACK_TYPE, "outputs": {}}]}


# -- a preview ---------------------------------------------------------------------------------

def step(op: str, state: dict, old: dict | None = None, diffs: list[str] | None = None) -> dict:
    md = {"op": op, "urn": state["urn"], "type": state["type"], "provider": state.get("provider", "")}
    if op != "delete":
        md["new"] = state
    if old is not None or op == "delete":
        md["old"] = old or state
    if diffs is not None:
        md["diffs"] = diffs
        md["detailedDiff"] = {d: {"diffKind": "update", "inputDiff": True} for d in diffs}
    return {"sequence": 0, "timestamp": 0, "resourcePreEvent": {"metadata": md, "planning": True}}


def first_preview_events(ops: dict[str, str] | None = None, *, drift: dict[str, str] | None = None,
                         diffs: dict[str, list[str]] | None = None) -> list[dict]:
    """The events of a preview: the stack, the provider, every component and step `create` (or
    the op given in `ops` for a name), with a prelude, the stack's outputs (the records of the
    steps still in the program: not the deleted ones) and a summary. drift: name → the reason
    the program observed (carried in `environment`); diffs: name → the changed inputs (default:
    `create` for an update or replace, plus `environment` with drift)."""
    ops, drift, diffs = ops or {}, drift or {}, diffs or {}
    events = [{"sequence": 0, "timestamp": 0, "preludeEvent": {"config": {}}},
              step(ops.get(STACK_TYPE, "create"), {"type": STACK_TYPE, "urn": STACK_URN, "parent": "", "inputs": {}}),
              step("create", {"type": "pulumi:providers:command", "urn": PROVIDER, "parent": "", "custom": True,
                              "inputs": {}})]
    for comp in COMPONENTS:
        events.append(step(ops.get(comp, "create"), component_state(comp)))
    for name in COMMANDS:
        op = ops.get(name, "create")
        state = command_state(name, drift.get(name))
        changed = diffs.get(name)
        if changed is None and op in ("update", "replace"):
            changed = (["create"] if name not in drift else []) + (["environment"] if name in drift else [])
        if op == "replace":
            events += [step("create-replacement", state, diffs=changed), step("replace", state, diffs=changed),
                       step("delete-replaced", state, diffs=changed)]
        else:
            events.append(step(op, state, diffs=changed))
    events.append(node_outputs_event(step_records([n for n in COMMANDS if ops.get(n) != "delete"]),
                                      ops.get(STACK_TYPE, "create")))
    events.append({"sequence": 0, "timestamp": 0, "summaryEvent": {"resourceChanges": {}}})
    for i, e in enumerate(events):
        e["sequence"] = i
    return events


def plan(ops: dict[str, str] | None = None) -> dict:
    """The saved plan file of the same preview: every resource's goal with parent and deps (a
    resource being deleted has none)."""
    ops = ops or {}
    plans = {STACK_URN: {"goal": {"type": STACK_TYPE, "name": "blackwell-serving-lab", "custom": False},
                         "steps": ["create"]}}
    for comp, (ctype, parent) in COMPONENTS.items():
        plans[component_urn(comp)] = {
            "goal": {"type": ctype, "name": comp.split("#")[0], "custom": False,
                     "parent": component_urn(parent) if parent else STACK_URN},
            "steps": [ops.get(comp, "create")]}
    for name, cmd in COMMANDS.items():
        if ops.get(name) == "delete":
            continue
        plans[command_urn(name)] = {
            "goal": {"type": command_type(name), "name": name, "custom": True, "parent": component_urn(cmd.parent),
                     "dependencies": [command_urn(d) for d in cmd.deps], "provider": PROVIDER_REF},
            "steps": [ops.get(name, "create")]}
    return {"manifest": {"time": "2025-12-02T11:00:00Z", "magic": "", "version": "v3.272.0"},
            "resourcePlans": copy.deepcopy(plans), "config": {}}


def todo(events: list[dict], plan: dict | None = None, spec=None, previous: dict | None = None) -> list:
    """The todo items of a preview, as the command builds them: what each step is from the
    preview's stack output over the last `up`'s."""
    from components.todo.plan import build_items, declared_steps, step_metadata
    return build_items(step_metadata(events), plan, spec, declared_steps(events, previous))
