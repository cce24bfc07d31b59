"""Node facts, each defined once: one module per fact holds the shell that reads it (a template
under templates/scripts/facts/), its parser and the expectations stated in it. The observation
(components/facts: one probe per node), the preflight and the waits all include that shell,
so they cannot disagree on what a fact means."""

from components.facts import (
    endpoint,
    env_file,
    fabric_link,
    image_id,
    model_cache,
    ray_members,
    rdma_port,
    unit_state,
    venv_current,
)
from components.facts.base import ABSENT, Expectation, Fact, Facts, Reading, WatchItem, sha256_text
from components.facts.endpoint import EndpointAnswers
from components.facts.env_file import EnvFileWritten
from components.facts.fabric_link import FabricUp, LinkFacts
from components.facts.image_id import ImageCopied, ImagePresent
from components.facts.model_cache import CacheComplete, CacheCopied
from components.facts.ray_members import RayMembers
from components.facts.readings import READINGS
from components.facts.unit_state import UnitFacts, UnitKept, UnitRetired, UnitRunning
from components.facts.venv_current import VenvCurrent

# Every fact, in the order the probe prints them.
ALL: tuple[Fact, ...] = (unit_state.FACT, image_id.FACT, model_cache.FACT, fabric_link.FACT, rdma_port.FACT,
                         endpoint.FACT, ray_members.FACT, venv_current.FACT, env_file.FACT)

__all__ = ["ABSENT", "ALL", "READINGS", "Reading", "CacheComplete", "CacheCopied", "EndpointAnswers", "EnvFileWritten", "Expectation", "FabricUp", "Fact",
           "Facts", "ImageCopied", "ImagePresent", "LinkFacts", "RayMembers", "UnitFacts", "UnitKept",
           "UnitRetired", "UnitRunning", "VenvCurrent", "WatchItem", "sha256_text"]
