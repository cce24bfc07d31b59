"""Observed node state: one bounded, read-only probe per node while planning, made of the
shells of the node facts the stack's expectations look at (components/facts). A step whose
expectation does not hold is pending with the reason (`drift: …`), even when its inputs did
not change."""

from .facts import NodeFacts, Watch
from .observer import ObserveError, Observer

__all__ = ["NodeFacts", "Watch", "ObserveError", "Observer"]
