"""Foreign units: RetiredService stops one (and gives it back on destroy); KeptService only
checks that one stays up and never touches it."""

from __future__ import annotations

from typing import Sequence

import pulumi

from components.steps import types
from components.resources.node import Node
from components.facts import UnitKept, UnitRetired
from components.steps.remote import run
from components.steps.render import render
from components.steps.info import StepInfo


class RetiredService(pulumi.ComponentResource):
    def __init__(self, node: Node, unit: str, state_dir: str, opts: pulumi.ResourceOptions | None = None,
                 depends_on: Sequence[pulumi.Resource] = ()):
        name = f"{node.name}-{unit.removesuffix('.service')}"
        super().__init__(types.RETIRED_SERVICE, name, None, opts)
        values = dict(unit=unit, state_dir=state_dir)
        self.command = run(f"{name}-retire", node, parent=self, depends_on=depends_on,
                           step=StepInfo(node.name, "retire", do=f"Stop and disable {unit} on {node.name}",
                                         undo=f"Start {unit} again on {node.name} (restore)"),
                           create=render("scripts/retire-service.sh.j2", **values),
                           delete=render("scripts/restore-service.sh.j2", **values), undo="remove",
                           expect=UnitRetired(node.name, unit))
        self.register_outputs({"unit": unit, "node": node.name})


class KeptService(pulumi.ComponentResource):
    def __init__(self, node: Node, unit: str, opts: pulumi.ResourceOptions | None = None):
        name = f"{node.name}-{unit.removesuffix('.service')}"
        super().__init__(types.KEPT_SERVICE, name, None, opts)
        self.command = run(f"{name}-check", node, parent=self,
                           step=StepInfo(node.name, "verify", priority="normal",
                                         do=f"Check that {unit} stays up on {node.name} (never touched)",
                                         undo=f"Stop checking {unit} on {node.name}"),
                           create=render("scripts/check-kept.sh.j2", unit=unit),
                           expect=UnitKept(node.name, unit))
        self.register_outputs({"unit": unit, "node": node.name})
