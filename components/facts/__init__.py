"""Node facts, each defined once: one module per fact holds the shell that reads it (a template
under templates/scripts/facts/), its parser and the expectations stated in it. The observation
(components/observe: one probe per node), the preflight and the waits all include that shell,
so they cannot disagree on what a fact means."""

from . import endpoint, env_file, fabric_link, image_id, model_cache, ray_members, rdma_port, unit_state, venv_current
from .base import ABSENT, Expectation, Fact, Facts, WatchItem, sha256_text
from .endpoint import EndpointAnswers
from .env_file import EnvFileWritten
from .fabric_link import FabricUp, LinkFacts
from .image_id import ImageCopied, ImagePresent
from .model_cache import CacheComplete, CacheCopied
from .ray_members import RayMembers
from .unit_state import UnitFacts, UnitKept, UnitRetired, UnitRunning
from .venv_current import VenvCurrent

# Every fact, in the order the probe prints them.
ALL: tuple[Fact, ...] = (unit_state.FACT, image_id.FACT, model_cache.FACT, fabric_link.FACT, rdma_port.FACT,
                         endpoint.FACT, ray_members.FACT, venv_current.FACT, env_file.FACT)

__all__ = ["ABSENT", "ALL", "CacheComplete", "CacheCopied", "EndpointAnswers", "EnvFileWritten", "Expectation", "FabricUp", "Fact",
           "Facts", "ImageCopied", "ImagePresent", "LinkFacts", "RayMembers", "UnitFacts", "UnitKept",
           "UnitRetired", "UnitRunning", "VenvCurrent", "WatchItem", "sha256_text"]
