"""Node: one machine reached by SSH with a pinned host key. Other components run their
scripts through its connection (components/steps/remote.py) and record there what each step is
(components/steps/info.py); it changes nothing by itself."""

from __future__ import annotations

import os
from pathlib import Path

import pulumi

from components.steps import types
from components.config.schema import NodeSpec
from components.steps.info import STEPS_OUTPUT, StepInfo


class Node(pulumi.ComponentResource):
    def __init__(self, spec: NodeSpec, private_key: str | None, opts: pulumi.ResourceOptions | None = None):
        super().__init__(types.NODE, spec.name, None, opts)
        self.spec = spec
        self.name = spec.name
        # What a step needs to reach this node (the key kept a secret in the state). Without a
        # key the SSH agent answers.
        self.connection = {
            "host": spec.host,
            "port": spec.ssh.port,
            "user": spec.ssh.user,
            "private_key": pulumi.Output.secret(private_key) if private_key else None,
            "host_key": spec.ssh.host_key,
            "connect_timeout_s": spec.ssh.connect_timeout_s,
        }
        # The same, in plain text, for the program's own read-only probe; never a resource input.
        self.probe_connection = {**self.connection, "private_key": private_key}
        # Set by the stack when the nodes are observed (components/facts); None offline.
        self.observer = None
        # Set by the stack when a failed `up` rolls back (components/steps/rollback.py); None: it does not.
        self.rollback = None
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
