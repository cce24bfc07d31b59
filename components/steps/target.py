"""What the step library needs of the components that use it, as protocols: the step library sits
on a floor below the facts and the components, and knows neither (components/__init__.py FLOORS).

A step runs on a StepTarget (a resources/ Node is one): a name, an SSH connection, the context its
steps run with, and a place to record each step. The context's observer judges what a step expects
to see on its node (an Expectation of components/facts, opaque here) before the plan is made."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    import pulumi

    from components.steps.info import StepContext, StepInfo
    from components.steps.ssh import Connection

# What a step expects to see on its node once it ran: built and judged by components/facts
# (facts.base.Expectation); the step library only carries it to the observer.
Expectation = Any


class Observer(Protocol):
    def verdict(self, expectation: Expectation | None) -> Callable[[], str]:
        """The step's observed reason (why it must run again, or that it need not), asked once the
        nodes were observed."""


class StepTarget(Protocol):
    name: str
    connection: Connection
    context: StepContext

    def record_step(self, resource: pulumi.Resource, step: StepInfo) -> None:
        """Keep what the step is, for the todo list (components/steps/info.py)."""
