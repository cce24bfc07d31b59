"""The one shape of every component of this package, as Pulumi's own component packages have it:

    X(name: str, args: XArgs, opts: pulumi.ResourceOptions | None = None)

- `name` is the component's resource name, given by the caller (its children are named from it
  or from their args, as before: the URNs of a state do not change);
- `args` is a frozen dataclass beside the component (`NodeArgs`, `ModelCacheArgs`, ...): what the
  component needs, typed, including what its steps wait for (`depends_on`) and, for Node, the
  step context (components/steps/info.py StepContext);
- `opts` is passed to pulumi.ComponentResource as it is (parent, aliases, ...).

Every component exposes the same handle, `ready` (a Ready): node name → the steps after which
the component's work on that node is done. A component that waits for another depends on
`other.ready.on(node)` (its work there) or `other.ready.all()` (all of it); never on a step it
picks out of the other's attributes. tests/unit/test_component_shape.py pins this."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Iterable, Mapping

import pulumi


@dataclass(frozen=True)
class Ready:
    """node name → the steps after which a component's work on that node is done (a copy is
    keyed by the node it copies to, a check by the node it checks)."""
    steps: Mapping[str, tuple[pulumi.Resource, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, pulumi.Resource]]) -> "Ready":
        """From (node, step) pairs, in their order; a node may come more than once."""
        steps: dict[str, tuple[pulumi.Resource, ...]] = {}
        for node, step in pairs:
            steps[node] = (*steps.get(node, ()), step)
        return cls(steps)

    def on(self, *nodes: str) -> list[pulumi.Resource]:
        """What to wait for before using the component's work on `nodes` (none there: nothing)."""
        return [s for n in nodes for s in self.steps.get(n, ())]

    def all(self) -> list[pulumi.Resource]:
        return [s for steps in self.steps.values() for s in steps]

    def union(self, *others: "Ready") -> "Ready":
        return Ready.of([pair for r in (self, *others) for pair in r.pairs()])

    def pairs(self) -> list[tuple[str, pulumi.Resource]]:
        return [(n, s) for n, steps in self.steps.items() for s in steps]


class Component(pulumi.ComponentResource):
    """The base of every component: its type token (components/steps/types.py) is the class's TYPE."""
    TYPE: ClassVar[str]
    ready: Ready

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None):
        super().__init__(self.TYPE, name, None, opts)
        self.ready = Ready()
