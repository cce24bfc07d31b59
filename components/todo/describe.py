"""One pending resource → what an operator reads: its sentence, its phase and its priority.

A resource is recognised by its place in the component tree (the type chain of its URN, e.g.
`blackwell:stack:ServingStack$blackwell:services:RetiredService$command:remote:Command`), its
name, its parent component's name and the `[blackwell <step>]` tag its script logs with.

Priority rule (one line, on purpose): **normal** for checks of kept services and for
deletions (clean-up); **high** for everything else, which is the path to a serving engine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from components.config.schema import StackSpec

# preflight: checks that gate the first change (engine probe, fabric link), when a stack has them.
PHASES = ("preflight", "retire", "image", "model", "cluster", "serve", "verify")

# The tag every node script logs with: log() { printf '[blackwell %s] %s\n' 'unit bws-x.service' "$*" …
_STEP_TAG = re.compile(r"""printf '\[blackwell %s\] %s\\n' (?:'([^']*)'|(\S+))""")


def step_tag(script: object) -> str | None:
    """The `[blackwell …]` tag of a rendered node script ("unit bws-tiny.service"), if any."""
    if not isinstance(script, str):
        return None
    m = _STEP_TAG.search(script)
    return (m.group(1) or m.group(2)) if m else None


@dataclass(frozen=True)
class Resource:
    """What describe() needs to know about one resource of the plan."""
    urn: str
    types: tuple[str, ...]          # the URN's type chain, outermost first
    name: str
    parent_name: str | None
    node: str | None                # from connection.host
    inputs: dict
    op: str = "create"              # create, update, replace or delete (what the step does)

    @property
    def delete(self) -> bool:
        return self.op == "delete"

    @property
    def type(self) -> str:
        return self.types[-1] if self.types else ""

    @property
    def parent_type(self) -> str:
        return self.types[-2] if len(self.types) > 1 else ""

    @property
    def grandparent_type(self) -> str:
        return self.types[-3] if len(self.types) > 2 else ""


@dataclass(frozen=True)
class Description:
    kind: str
    phase: str
    content: str
    priority: str


def _unit_from_tag(res: Resource, prefix: str) -> str | None:
    tag = step_tag(res.inputs.get("create")) or step_tag(res.inputs.get("delete"))
    if tag and tag.startswith(prefix + " "):
        return tag[len(prefix) + 1:]
    return None


def _service_unit(res: Resource, prefix: str) -> str:
    """The foreign unit of a Retired/KeptService: from the script's tag, else from the name."""
    unit = _unit_from_tag(res, prefix)
    if unit:
        return unit
    base = res.parent_name or res.name
    if res.node and base.startswith(res.node + "-"):
        base = base[len(res.node) + 1:]
    return base if "." in base else base + ".service"


def kind_of(res: Resource) -> str:
    parent, name, pname = res.parent_type, res.name, res.parent_name or ""
    if parent == "blackwell:services:RetiredService":
        return "retire"
    if parent == "blackwell:services:KeptService":
        return "keep"
    if parent == "blackwell:image:ContainerImage":
        return "image-build"
    if parent == "blackwell:image:ImageSync":
        return "image-copy"
    if parent == "blackwell:model:ModelCache":
        if name == f"{pname}-upload" or res.type.endswith(":CopyToRemote"):
            return "model-upload"
        if name == f"{pname}-fetch":
            return "model-fetch"
        return "model-copy"
    if parent == "blackwell:unit:SystemdUnit":
        if res.grandparent_type == "blackwell:cluster:RayCluster":
            role = _ray_role(res)
            return f"ray-{role}"
        if res.grandparent_type == "blackwell:deployment:Deployment":
            return "engine-unit"
        return "unit"
    if parent == "blackwell:cluster:RayCluster":
        return "ray-ready"
    if parent == "blackwell:deployment:Deployment" and name == f"{pname}-health":
        return "health"
    if parent == "blackwell:preflight:EngineProbe":
        return "preflight-engine"
    if parent == "blackwell:preflight:FabricCheck":
        return "preflight-fabric"
    if parent == "blackwell:preflight:FabricBandwidth":
        return "preflight-bandwidth"
    if parent.startswith("blackwell:preflight:"):
        return "preflight"
    return "other"


def _ray_role(res: Resource) -> str:
    tag = _unit_from_tag(res, "unit") or ""
    if tag.endswith("-head.service"):
        return "head"
    if tag.endswith("-worker.service"):
        return "worker"
    return "head" if "-head-" in (res.parent_name or res.name) else "worker"


PHASE_OF_KIND = {
    "retire": "retire", "keep": "verify",
    "image-build": "image", "image-copy": "image",
    "model-upload": "model", "model-fetch": "model", "model-copy": "model",
    "ray-head": "cluster", "ray-worker": "cluster", "ray-ready": "cluster",
    "engine-unit": "serve", "unit": "serve", "health": "verify",
    "preflight-engine": "preflight", "preflight-fabric": "preflight", "preflight-bandwidth": "preflight",
    "preflight": "preflight",
}

# A resource we do not know yet: its phase from the module of its component's type token.
PHASE_OF_MODULE = {"preflight": "preflight", "services": "retire", "image": "image", "model": "model", "cluster": "cluster",
                   "unit": "serve", "deployment": "serve"}


def phase_of(res: Resource, kind: str) -> str:
    if kind in PHASE_OF_KIND:
        return PHASE_OF_KIND[kind]
    for t in reversed(res.types[:-1]):
        parts = t.split(":")
        if len(parts) == 3 and parts[0] == "blackwell" and parts[1] in PHASE_OF_MODULE:
            return PHASE_OF_MODULE[parts[1]]
    return "serve"


def _over(spec: StackSpec | None) -> str:
    return "over the management network" if spec is not None and spec.fabric is None else "over the fabric"


def _peer(res: Resource, prefix: str) -> str:
    return res.name[len(prefix):] if res.name.startswith(prefix) else res.name


def content_of(res: Resource, kind: str, spec: StackSpec | None) -> str:
    node = res.node or "?"
    pname = res.parent_name or res.name
    gone = res.delete
    if kind == "retire":
        unit = _service_unit(res, "retire")
        return f"Start {unit} again on {node} (restore)" if gone else f"Stop and disable {unit} on {node}"
    if kind == "keep":
        unit = _service_unit(res, "keep")
        return (f"Stop checking {unit} on {node}" if gone
                else f"Check that {unit} stays up on {node} (never touched)")
    if kind == "image-build":
        image = _image(spec, pname)
        if gone:
            return f"Remove image {pname} from {node}"
        if image is not None:
            from components.image import requirements
            reqs = requirements(image)
            if not reqs:
                return f"Pull image {image.base} on {node}"
            return f"Build image {pname} on {node} ({', '.join(reqs)})"
        return f"Build image {pname} on {node}"
    if kind == "image-copy":
        image = pname.removesuffix("-sync")
        peer = _peer(res, f"{pname}-")
        return f"Remove image {image} from {peer}" if gone else f"Copy image {image} to {peer} {_over(spec)}"
    if kind == "model-upload":
        return (f"Drop the uploaded files of model {pname} on {node}" if gone
                else f"Upload model {pname} from this machine to {node}")
    if kind == "model-fetch":
        if gone:
            return f"Remove model {pname} from {node}"
        model = _model(spec, pname)
        if model is None or model.source.kind == "hub":
            repo = f" ({model.repo})" if model is not None else ""
            return f"Download model {pname}{repo} on {node}"
        if model.source.kind == "local":
            return f"Upload model {pname} from this machine to {node}, hash and install it"
        return f"Verify and adopt model {pname} from {model.source.path} on {node}"
    if kind == "model-copy":
        peer = _peer(res, f"{pname}-to-")
        return f"Remove model {pname} from {peer}" if gone else f"Copy model {pname} to {peer} {_over(spec)}"
    if kind in ("ray-head", "ray-worker"):
        role = kind.removeprefix("ray-")
        if gone:
            return f"Stop Ray {role} on {node}"
        if res.op in ("update", "replace"):
            return f"Restart Ray {role} on {node} with its new unit"
        return f"Start Ray {role} on {node}"
    if kind == "ray-ready":
        cluster = pname
        return (f"Forget the readiness check of Ray cluster {cluster}" if gone
                else f"Wait until every node has joined Ray cluster {cluster}")
    if kind in ("engine-unit", "unit"):
        unit = _unit_from_tag(res, "unit") or pname
        if gone:
            return f"Stop and remove {unit} from {node}"
        if res.op in ("update", "replace"):
            return f"Rewrite and restart {unit} on {node}"
        return f"Install and start {unit} on {node}"
    if kind == "health":
        return (f"Drop the health gate of {pname}" if gone
                else f"Health gate: a real chat completion from {pname}")
    if kind == "preflight-engine":
        deployment = pname.removesuffix("-preflight")
        return (f"Drop the engine probe of {deployment}" if gone
                else f"Preflight: the engine image of {deployment} knows its model (probe on {node})")
    if kind == "preflight-fabric":
        return (f"Drop the fabric check of {node}" if gone
                else f"Preflight: the fabric link of {node} is up (address, MTU, RDMA ports, peers)")
    if kind == "preflight-bandwidth":
        deployment = pname.removesuffix("-bandwidth")
        if gone:
            return f"Drop the fabric bandwidth check of {deployment}"
        d = next((d for d in spec.deployments if d.name == deployment), None) if spec is not None else None
        if d is None:
            return f"Preflight: measure the fabric's all-reduce bandwidth of {deployment} (from {node})"
        from components.preflight.bandwidth import and_list, backend
        return f"Preflight: measure the fabric's all-reduce bandwidth between {and_list(d.nodes)} ({backend(d)})"
    if kind == "preflight":
        check = res.parent_type.rsplit(":", 1)[-1]
        return f"Drop the preflight {check} {pname}" if gone else f"Preflight: {check} {pname} on {node}"
    return f"Remove {res.name} from {node}" if gone else f"Run {res.name} on {node}"


def _image(spec: StackSpec | None, name: str):
    if spec is None:
        return None
    return next((i for i in spec.images if i.name == name), None)


def _model(spec: StackSpec | None, name: str):
    if spec is None:
        return None
    return next((m for m in spec.models if m.name == name), None)


def priority_of(kind: str, delete: bool) -> str:
    return "normal" if delete or kind == "keep" else "high"


def describe(res: Resource, spec: StackSpec | None = None) -> Description:
    kind = kind_of(res)
    return Description(kind=kind, phase=phase_of(res, kind), content=content_of(res, kind, spec),
                       priority=priority_of(kind, res.delete))
