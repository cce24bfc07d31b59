"""Observed node state: one bounded, read-only probe per node while planning, and the
expectations each component has of it. A step whose expectation does not hold is pending with
the reason (`drift: …`), even when its inputs did not change."""

from .expect import (Expectation, ImageCopied, ImagePresent, CacheComplete, CacheCopied, EndpointAnswers,
                     FabricUp, RayMembers, UnitKept, UnitRetired, UnitRunning, VenvCurrent)
from .facts import NodeFacts, Watch
from .observer import ObserveError, Observer

__all__ = ["Expectation", "ImageCopied", "ImagePresent", "CacheComplete", "CacheCopied", "EndpointAnswers",
           "FabricUp", "RayMembers", "UnitKept", "UnitRetired", "UnitRunning", "VenvCurrent", "NodeFacts", "Watch",
           "ObserveError", "Observer"]
