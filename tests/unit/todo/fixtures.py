"""Hand-written engine data for the todo tests, in the engine's wire format: the step metadata
of resourcePreEvents and a saved plan file (goal.parent, goal.dependencies), for the `lab`
stack's graph as components/stack.py wires it. A table below is the whole graph; small
functions turn it into events and a plan, so each test can change one row."""

from __future__ import annotations

import copy

STACK_URN = "urn:pulumi:lab::blackwell-serving::pulumi:pulumi:Stack::blackwell-serving-lab"
ROOT = "blackwell:stack:ServingStack"
PROVIDER = "urn:pulumi:lab::blackwell-serving::pulumi:providers:command::default_1_2_1"
HOSTS = {"lab-1": "198.18.0.11", "lab-2": "198.18.0.12"}

# Components: name → (type, parent component name or None for the stack component).
COMPONENTS = {
    "lab": (ROOT, None),
    "lab-1": ("blackwell:node:Node", "lab"),
    "lab-2": ("blackwell:node:Node", "lab"),
    "lab-2-embeddings": ("blackwell:services:KeptService", "lab"),
    "lab-1-glm": ("blackwell:services:RetiredService", "lab"),
    "vllm-lab": ("blackwell:image:ContainerImage", "lab"),
    "vllm-lab-sync": ("blackwell:image:ImageSync", "lab"),
    "tiny": ("blackwell:model:ModelCache", "lab"),
    "tiny-ray": ("blackwell:cluster:RayCluster", "lab"),
    "tiny-ray-head-lab-1": ("blackwell:unit:SystemdUnit", "tiny-ray"),
    "tiny-ray-worker-lab-2": ("blackwell:unit:SystemdUnit", "tiny-ray"),
    "tiny#deployment": ("blackwell:deployment:Deployment", "lab"),
    "tiny-lab-1": ("blackwell:unit:SystemdUnit", "tiny#deployment"),
}

# Commands, in the order the program registers them:
# name → (type, parent component, node, the script's [blackwell …] tag, dependencies by name).
COMMANDS = {
    "lab-2-embeddings-check": ("Command", "lab-2-embeddings", "lab-2", "keep embeddings.service", []),
    "lab-1-glm-retire": ("Command", "lab-1-glm", "lab-1", "retire glm.service", []),
    "vllm-lab-build": ("Command", "vllm-lab", "lab-1", "image blackwell-serving/vllm-lab:0a1b2c3d4e5f", []),
    "vllm-lab-sync-lab-2": ("Command", "vllm-lab-sync", "lab-1",
                            "image blackwell-serving/vllm-lab:0a1b2c3d4e5f -> lab-2", ["vllm-lab-build"]),
    "tiny-upload": ("CopyToRemote", "tiny", "lab-1", None, []),
    "tiny-fetch": ("Command", "tiny", "lab-1", "model tiny", ["tiny-upload"]),
    "tiny-to-lab-2": ("Command", "tiny", "lab-1", "model tiny -> lab-2", ["tiny-fetch"]),
    "tiny-ray-head-lab-1-install": ("Command", "tiny-ray-head-lab-1", "lab-1", "unit bws-tiny-ray-head.service",
                                    ["vllm-lab-build", "vllm-lab-sync-lab-2", "lab-1-glm-retire"]),
    "tiny-ray-worker-lab-2-install": ("Command", "tiny-ray-worker-lab-2", "lab-2", "unit bws-tiny-ray-worker.service",
                                      ["vllm-lab-build", "vllm-lab-sync-lab-2", "lab-1-glm-retire",
                                       "tiny-ray-head-lab-1-install"]),
    "tiny-ray-ready": ("Command", "tiny-ray", "lab-1", "ray tiny-ray",
                       ["tiny-ray-head-lab-1-install", "tiny-ray-worker-lab-2-install"]),
    "tiny-lab-1-install": ("Command", "tiny-lab-1", "lab-1", "unit bws-tiny.service",
                           ["vllm-lab-build", "vllm-lab-sync-lab-2", "tiny-fetch", "tiny-to-lab-2",
                            "lab-1-glm-retire", "tiny-ray-ready"]),
    "tiny-health": ("Command", "tiny#deployment", "lab-1", "health tiny", ["tiny-lab-1-install"]),
}


def _chain(component: str | None) -> list[str]:
    types = []
    while component is not None:
        ctype, parent = COMPONENTS[component]
        types.insert(0, ctype)
        component = parent
    return types


def component_urn(component: str) -> str:
    name = component.split("#")[0]
    return f"urn:pulumi:lab::blackwell-serving::{'$'.join(_chain(component))}::{name}"


def command_urn(name: str) -> str:
    kind, parent, *_ = COMMANDS[name]
    return f"urn:pulumi:lab::blackwell-serving::{'$'.join(_chain(parent) + [f'command:remote:{kind}'])}::{name}"


def script(tag: str | None, body: str = "true") -> str:
    if tag is None:
        return body
    return ("#!/usr/bin/env bash\nset -euo pipefail\n"
            f"log() {{ printf '[blackwell %s] %s\\n' '{tag}' \"$*\" >&2; }}\n{body}\n")


def command_state(name: str) -> dict:
    kind, parent, node, tag, _ = COMMANDS[name]
    inputs = {"connection": {"host": HOSTS[node], "port": 22, "user": "root", "privateKey": "[secret]",
                             "hostKey": "ssh-ed25519 AAAA", "perDialTimeout": 10, "dialErrorLimit": 3}}
    if kind == "Command":
        inputs.update(create=script(tag), update=script(tag), delete=script(tag, "echo gone"), logging="stdoutAndStderr")
    else:
        inputs.update(remotePath="/var/lib/blackwell-serving/models/.staging/blackwell-lab--tiny-llama--lab-v1",
                      source={"4dabf18193072939515e22adb298388d": "0def7320c3a5731c473e5ecbe6d01bc7",
                              "path": "tests/lab/.state/tiny-model"})
    return {"type": f"command:remote:{kind}", "urn": command_urn(name), "custom": True, "id": "",
            "parent": component_urn(parent), "provider": PROVIDER + "::04da6b54", "inputs": inputs, "outputs": {}}


def component_state(component: str) -> dict:
    ctype, parent = COMPONENTS[component]
    return {"type": ctype, "urn": component_urn(component), "custom": False,
            "parent": component_urn(parent) if parent else STACK_URN, "inputs": {}, "outputs": {}}


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


def first_preview_events(ops: dict[str, str] | None = None) -> list[dict]:
    """The events of a first preview: the stack, the provider, every component and command
    `create` (or the op given in `ops` for a name), with a prelude and a summary around them."""
    ops = ops or {}
    events = [{"sequence": 0, "timestamp": 0, "preludeEvent": {"config": {}}},
              step("create", {"type": "pulumi:pulumi:Stack", "urn": STACK_URN, "custom": False, "inputs": {}}),
              step("create", {"type": "pulumi:providers:command", "urn": PROVIDER, "custom": True, "inputs": {}})]
    for comp in COMPONENTS:
        events.append(step(ops.get(comp, "create"), component_state(comp)))
    for name in COMMANDS:
        op = ops.get(name, "create")
        diffs = ["create"] if op in ("update", "replace") else None
        if op == "replace":
            st = command_state(name)
            events += [step("create-replacement", st, diffs=diffs), step("replace", st, diffs=diffs),
                       step("delete-replaced", st, diffs=diffs)]
        else:
            events.append(step(op, command_state(name), diffs=diffs))
    events.append({"sequence": 0, "timestamp": 0, "summaryEvent": {"resourceChanges": {}}})
    for i, e in enumerate(events):
        e["sequence"] = i
    return events


def plan(ops: dict[str, str] | None = None) -> dict:
    """The saved plan file of the same preview: every resource's goal with parent and deps."""
    ops = ops or {}
    plans = {STACK_URN: {"goal": {"type": "pulumi:pulumi:Stack", "name": "blackwell-serving-lab", "custom": False},
                         "steps": ["create"]}}
    for comp, (ctype, parent) in COMPONENTS.items():
        plans[component_urn(comp)] = {
            "goal": {"type": ctype, "name": comp.split("#")[0], "custom": False,
                     "parent": component_urn(parent) if parent else STACK_URN},
            "steps": [ops.get(comp, "create")]}
    for name, (kind, parent, _, _, deps) in COMMANDS.items():
        plans[command_urn(name)] = {
            "goal": {"type": f"command:remote:{kind}", "name": name, "custom": True, "parent": component_urn(parent),
                     "dependencies": [command_urn(d) for d in deps], "provider": PROVIDER + "::04da6b54"},
            "steps": [ops.get(name, "create")]}
    return {"manifest": {"time": "2025-12-02T11:00:00Z", "magic": "", "version": "v3.272.0"},
            "resourcePlans": copy.deepcopy(plans), "config": {}}
