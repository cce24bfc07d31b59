"""Foreign units: RetiredService stops one (and gives it back on destroy); KeptService only
checks that one stays up and never touches it."""

from __future__ import annotations

from typing import Sequence

import pulumi

from .node import Node
from .observe import UnitKept, UnitRetired
from .remote import run
from .render import render


class RetiredService(pulumi.ComponentResource):
    def __init__(self, node: Node, unit: str, state_dir: str, opts: pulumi.ResourceOptions | None = None,
                 depends_on: Sequence[pulumi.Resource] = ()):
        name = f"{node.name}-{unit.removesuffix('.service')}"
        super().__init__("blackwell:services:RetiredService", name, None, opts)
        values = dict(unit=unit, state_dir=state_dir)
        self.command = run(f"{name}-retire", node, parent=self, depends_on=depends_on,
                           create=render("scripts/retire-service.sh.j2", **values),
                           delete=render("scripts/restore-service.sh.j2", **values),
                           expect=UnitRetired(node.name, unit))
        self.register_outputs({"unit": unit, "node": node.name})


class KeptService(pulumi.ComponentResource):
    def __init__(self, node: Node, unit: str, opts: pulumi.ResourceOptions | None = None):
        name = f"{node.name}-{unit.removesuffix('.service')}"
        super().__init__("blackwell:services:KeptService", name, None, opts)
        self.command = run(f"{name}-check", node, parent=self,
                           create=render("scripts/check-kept.sh.j2", unit=unit),
                           expect=UnitKept(node.name, unit))
        self.register_outputs({"unit": unit, "node": node.name})
