"""Foreign units: RetiredService stops one (and gives it back on destroy); KeptService only
checks that one stays up and never touches it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pulumi

from components.facts import UnitKept, UnitRetired
from components.resources.component import Component, Ready
from components.resources.node import Node
from components.steps import types
from components.steps.info import StepInfo
from components.steps.remote import run
from components.steps.render import render


def foreign_unit_name(node: str, unit: str) -> str:
    """The component name of a foreign unit on a node: lab-1-glm."""
    return f"{node}-{unit.removesuffix('.service')}"


@dataclass(frozen=True)
class RetiredServiceArgs:
    node: Node
    unit: str
    state_dir: str
    depends_on: Sequence[pulumi.Resource] = ()


class RetiredService(Component):
    TYPE = types.RETIRED_SERVICE

    def __init__(self, name: str, args: RetiredServiceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        node, unit = args.node, args.unit
        values = dict(unit=unit, state_dir=args.state_dir)
        self.command = run(f"{name}-retire", node, parent=self, depends_on=args.depends_on,
                           step=StepInfo(node.name, "retire", do=f"Stop and disable {unit} on {node.name}",
                                         undo=f"Start {unit} again on {node.name} (restore)"),
                           create=render("scripts/retire-service.sh.j2", **values),
                           delete=render("scripts/restore-service.sh.j2", **values), undo="remove",
                           expect=UnitRetired(node.name, unit))
        self.ready = Ready.of([(node.name, self.command)])
        self.register_outputs({"unit": unit, "node": node.name})


@dataclass(frozen=True)
class KeptServiceArgs:
    node: Node
    unit: str


class KeptService(Component):
    TYPE = types.KEPT_SERVICE

    def __init__(self, name: str, args: KeptServiceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        node, unit = args.node, args.unit
        self.command = run(f"{name}-check", node, parent=self,
                           step=StepInfo(node.name, "verify", priority="normal",
                                         do=f"Check that {unit} stays up on {node.name} (never touched)",
                                         undo=f"Stop checking {unit} on {node.name}"),
                           create=render("scripts/check-kept.sh.j2", unit=unit),
                           expect=UnitKept(node.name, unit))
        self.ready = Ready.of([(node.name, self.command)])
        self.register_outputs({"unit": unit, "node": node.name})
