"""Build a stack's component graph under Pulumi's mocks (no engine, no hosts) and record every
resource the program registered: its type, name, parent, dependencies and inputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pulumi

from components.config import load_stack_file

REPO = Path(__file__).resolve().parents[2]
STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (REPO / "stacks").glob("Pulumi.*.yaml"))


@dataclass
class Registered:
    type: str
    name: str
    inputs: dict
    parent: str | None = None
    depends_on: list[str] = field(default_factory=list)


class Recorder(pulumi.runtime.Mocks):
    """Mocks that remember what was registered. Parents and dependencies are not passed to
    Mocks, so the monitor's RegisterResource is wrapped to read them off the request."""

    def __init__(self):
        self.resources: dict[str, Registered] = {}
        self._requests: dict[tuple[str, str], tuple[str | None, list[str]]] = {}

    def watch(self, monitor) -> None:
        register = monitor.RegisterResource

        def recording(request):
            self._requests[(request.type, request.name)] = (request.parent or None, list(request.dependencies))
            return register(request)
        monitor.RegisterResource = recording

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        parent, deps = self._requests.get((args.typ, args.name), (None, []))
        self.resources[f"{args.typ}::{args.name}"] = Registered(args.typ, args.name, dict(args.inputs), parent, deps)
        outputs = dict(args.inputs)
        if args.typ == "command:remote:Command":
            outputs.setdefault("stdout", "image-id=sha256:mock\n")
            outputs.setdefault("stderr", "")
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


def build(stack: str, preview: bool = True):
    """(ServingStack, Recorder) for stacks/Pulumi.<stack>.yaml, built under mocks."""
    from components.stack import ServingStack

    recorder = Recorder()
    pulumi.runtime.set_mocks(recorder, project="blackwell-serving", stack=stack, preview=preview)
    recorder.watch(pulumi.runtime.settings.SETTINGS.monitor)
    spec = load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")
    built = ServingStack(stack, spec)
    return built, recorder


def resolved(output) -> object:
    """Wait for an Output under mocks (the mock engine resolves synchronously on its loop)."""
    import asyncio

    return asyncio.get_event_loop().run_until_complete(output.future())
