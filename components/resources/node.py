"""Node: one machine reached by SSH with a pinned host key. Other components run their
scripts through its connection (components/steps/ssh.py Connection, components/steps/remote.py) with its
step context (components/steps/info.py StepContext) and record there what each step is
(components/steps/info.py); it changes nothing by itself."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pulumi

from components.config.schema import NodeSpec
from components.resources.component import Component
from components.steps import types
from components.steps.info import STEPS_OUTPUT, StepContext, StepInfo
from components.steps.ssh import Connection


@dataclass(frozen=True)
class NodeArgs:
    """spec: the node's stack entry; connection: its SSH, built once (Connection.of_node) and
    shared with the observation and the rollback, which read the node themselves; context: what
    every step on the node runs with (observer, rollback)."""
    spec: NodeSpec
    connection: Connection
    context: StepContext = StepContext()


class Node(Component):
    """A Node changes nothing by itself: its `ready` is empty."""
    TYPE = types.NODE

    def __init__(self, name: str, args: NodeArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        if name != args.spec.name:
            raise ValueError(f"node {args.spec.name}: its component is named {name!r}; name it as the node")
        self.spec = args.spec
        self.name = name
        self.connection = args.connection
        self.context = args.context
        # (resource, StepInfo) of every step that runs on this node or to it; registered as this
        # component's outputs once the stack is built (finish()).
        self.steps: list[tuple[pulumi.Resource, StepInfo]] = []

    def finish(self) -> None:
        """Register the outputs, what each of this node's steps is among them (components/steps/info.py)."""
        self.register_outputs({"host": self.spec.host, "arch": self.spec.arch,
                               STEPS_OUTPUT: [info.record(resource.urn) for resource, info in self.steps]})

    def record_step(self, resource: pulumi.Resource, step: StepInfo) -> None:
        if step.node != self.name:
            raise ValueError(f"step {step.do!r} is recorded on {self.name} but says it runs on {step.node}")
        self.steps.append((resource, step))


def read_private_key(spec: NodeSpec) -> str | None:
    """The key named by private_key_path, read now; None if it is absent (an offline preview on
    a machine without the operator's keys)."""
    if not spec.ssh.private_key_path:
        return None
    path = Path(os.path.expanduser(spec.ssh.private_key_path))
    if not path.is_file():
        pulumi.log.warn(f"node {spec.name}: private key {path} not found; using the SSH agent")
        return None
    return path.read_text()
