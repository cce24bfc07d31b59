"""Build a stack's component graph under Pulumi's mocks (no engine, no hosts) and record every
resource the program registered: its type, name, parent, dependencies and inputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pulumi

from components.config import load_stack_file
from components.monitoring.deploy import monitoring_for

REPO = Path(__file__).resolve().parents[2]
# The types of a step (components/steps/remote.py): a script on a node, work on the operator's machine.
COMMAND = "command:remote:Command"
LOCAL_COMMAND = "command:local:Command"
STEP_TYPES = (COMMAND, LOCAL_COMMAND)
ROOT_STACK = "pulumi:pulumi:Stack"
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
        self.mock_urns: dict[str, tuple[str, str, str | None]] = {}  # mock URN → (type, name, parent)
        self._requests: dict[tuple[str, str], tuple[str | None, list[str]]] = {}

    def watch(self, monitor) -> None:
        register = monitor.RegisterResource

        def recording(request):
            self._requests[(request.type, request.name)] = (request.parent or None, list(request.dependencies))
            response = register(request)
            self.mock_urns[response.urn] = (request.type, request.name, request.parent or None)
            return response
        monitor.RegisterResource = recording

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        parent, deps = self._requests.get((args.typ, args.name), (None, []))
        self.resources[f"{args.typ}::{args.name}"] = Registered(args.typ, args.name, dict(args.inputs), parent, deps)
        outputs = dict(args.inputs)
        if args.typ in STEP_TYPES:
            # An install step's `started=` line: its unit's start, named after the step.
            outputs.setdefault("stdout", f"image-id=sha256:mock\nstarted=start-of-{args.name}\n")
            outputs.setdefault("stderr", "")
        return f"{args.name}-id", outputs

    def urns(self, stack: str, project: str) -> list[str]:
        """The URNs the real engine gives our resources: the whole type chain of their parents
        below the root stack (the mock monitor keeps only the parent's own type)."""
        def chain(urn: str | None) -> list[str]:
            if urn is None or urn not in self.mock_urns:
                return []
            typ, _, parent = self.mock_urns[urn]
            return [] if typ == ROOT_STACK else chain(parent) + [typ]
        return [f"urn:pulumi:{stack}::{project}::{'$'.join(chain(urn))}::{name}"
                for urn, (typ, name, _) in self.mock_urns.items() if typ != ROOT_STACK]

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


def build(stack: str, preview: bool = True):
    """(ServingStack, Recorder) for stacks/Pulumi.<stack>.yaml, built under mocks."""
    from components.serving.stack import ServingStack, ServingStackArgs

    recorder = Recorder()
    pulumi.runtime.set_mocks(recorder, project="blackwell-serving", stack=stack, preview=preview)
    recorder.watch(pulumi.runtime.settings.SETTINGS.monitor)
    spec = load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")
    built = ServingStack(stack, ServingStackArgs(spec, monitoring=monitoring_for))
    return built, recorder


def plain(value):
    """A recorded input without its secret wrapper."""
    if isinstance(value, dict) and "value" in value and len(value) == 2:
        return value["value"]
    return value


def script_of(r: Registered, which: str = "create") -> str | None:
    """The script a step runs for `which` (create or delete): its command line reads it from
    stdin (components/remote.command_line), on a node or on the operator's machine."""
    from components.steps.remote import read_script

    line = plain(r.inputs.get(which))
    if not line:
        return line
    return read_script(line, plain(r.inputs["stdin"]))


def stdin_data(r: Registered) -> str:
    """What a remote step's stdin carries after its scripts (its data, secrets included)."""
    scripts = [s for s in (script_of(r, "create"), script_of(r, "delete")) if s]
    return plain(r.inputs["stdin"]).encode()[sum(len(s.encode()) for s in scripts):].decode()


def resolved(output) -> object:
    """Wait for an Output under mocks (the mock engine resolves synchronously on its loop)."""
    import asyncio

    return asyncio.get_event_loop().run_until_complete(output.future())


# ---------------------------------------------------------------------------------------------
# Snapshots: a whole built graph, with the unit texts and with every secret set to a sentinel.

# The value every secret of a stack takes in tests: it must never show up in a script or argv.
SENTINEL = "bws-sentinel-2c9f-never-in-plain-text"


@dataclass
class Snapshot:
    stack: str
    spec: object
    serving: object
    recorder: Recorder
    units: list  # every SystemdUnit the program created, in creation order
    watches: dict  # node → the Watch its one read-only probe was asked for

    def commands(self) -> list[Registered]:
        return [r for r in self.recorder.resources.values() if r.type == COMMAND]

    def steps(self) -> list[Registered]:
        return [r for r in self.recorder.resources.values() if r.type in STEP_TYPES]

    def by_name(self, name: str) -> Registered:
        [found] = [r for r in self.recorder.resources.values() if r.name == name]
        return found


def _secret_refs(value, found: list) -> None:
    from pydantic import BaseModel

    from components.config.schema import SecretRef

    if isinstance(value, SecretRef):
        found.append(value)
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            _secret_refs(getattr(value, name), found)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _secret_refs(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            _secret_refs(v, found)


def _file_secrets_to_sentinel(spec):
    """The same spec with every `file:` secret pointing at a file that holds SENTINEL."""
    import tempfile

    holder = Path(tempfile.mkdtemp(prefix="bws-secret-")) / "secret"
    holder.write_text(SENTINEL + "\n")

    def swap(value):
        if isinstance(value, dict):
            if set(value) == {"config", "env", "file"} and value["file"]:
                return {**value, "file": str(holder)}
            return {k: swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return value

    return type(spec).model_validate(swap(spec.model_dump()))


def snapshot(stack: str, spec=None) -> Snapshot:
    """Build `stack` (or `spec`, a StackSpec, under that stack's name) under mocks with every
    secret of the config (env and config references) set to SENTINEL; records the units."""
    import os

    from components.config.load import PROJECT
    from components.serving.stack import ServingStack, ServingStackArgs
    from components.resources.unit import SystemdUnit

    if spec is None:
        spec = load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")
    refs: list = []
    _secret_refs(spec, refs)
    if any(r.file for r in refs):
        spec = _file_secrets_to_sentinel(spec)
        refs = []
        _secret_refs(spec, refs)
    saved_env = {r.env: os.environ.get(r.env) for r in refs if r.env}
    units: list = []
    original_init = SystemdUnit.__init__

    def recording_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        units.append(self)

    out: dict = {}
    watches: dict = {}

    def probe(node, watch):
        """Stands in for the SSH probe: records what it was asked; finds nothing."""
        from components.facts.observation import NodeFacts
        watches[node] = watch
        return NodeFacts()

    @pulumi.runtime.test
    def go():
        recorder = Recorder()
        pulumi.runtime.set_mocks(recorder, project=PROJECT, stack=stack, preview=True)
        recorder.watch(pulumi.runtime.settings.SETTINGS.monitor)
        for r in refs:
            if r.config:
                pulumi.runtime.set_config(f"{PROJECT}:{r.config}", SENTINEL)
        out["serving"] = ServingStack(stack, ServingStackArgs(spec, observe=True, prober=probe,
                                                              monitoring=monitoring_for))
        out["recorder"] = recorder

    try:
        for name in saved_env:
            os.environ[name] = SENTINEL
        SystemdUnit.__init__ = recording_init
        go()
    finally:
        SystemdUnit.__init__ = original_init
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return Snapshot(stack, spec, out["serving"], out["recorder"], units, dict(sorted(watches.items())))
