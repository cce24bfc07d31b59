"""What a converged stack must show on its nodes, derived from the stack file through the
program's own names (components/names.py, by way of config/crosscheck.generated_names, the very
list the config checks clashes on) — so a stack change cannot leave the chaos bench checking an
old shape. Plain data, per node; bench/chaos_bench.py checks it, tests/unit/test_chaos_expectations.py
pins it against the units the program renders for the lab stack.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from components import names
from components.config.crosscheck import generated_names, rank_watch_ranks
from components.config.schema import StackSpec
from components.resources.image import image_tag
from components.resources.model import cache_paths


@dataclass
class NodeExpectations:
    active_units: list[str] = field(default_factory=list)   # ours: services, and timers of oneshot checks
    images: list[str] = field(default_factory=list)         # image tags (repository:tag)
    caches: list[str] = field(default_factory=list)         # model cache directories, manifest verified
    retired: list[str] = field(default_factory=list)        # foreign units stopped and disabled
    kept: list[str] = field(default_factory=list)           # foreign units running


def oneshot_services(spec: StackSpec) -> set[str]:
    """The services a timer starts (watchdog, rank watch): inactive between runs, their timers are checked."""
    out = set()
    for d in spec.deployments:
        if d.watchdog.enabled:
            out.add(names.watchdog_units(d.name)[0])
        for r in rank_watch_ranks(d):
            out.add(names.rank_watch_units(d.name, r)[0])
    return out


def node_expectations(spec: StackSpec) -> dict[str, NodeExpectations]:
    out = {n.name: NodeExpectations() for n in spec.nodes}
    oneshot = oneshot_services(spec)
    for node, kind, name, _path, _what in generated_names(spec):
        if kind == "unit" and name not in oneshot and name not in out[node].active_units:
            out[node].active_units.append(name)
    for image in spec.images:
        for n in dict.fromkeys([image.build_node, *image.nodes]):
            out[n].images.append(image_tag(image))
    for model in spec.models:
        for n in dict.fromkeys([model.fetch_node, *model.nodes]):
            out[n].caches.append(cache_paths(model)[0])
    for ref in spec.retire:
        out[ref.node].retired.append(ref.unit)
    for ref in spec.keep:
        out[ref.node].kept.append(ref.unit)
    return out


def served_models(spec: StackSpec) -> list[str]:
    """Every model name a completion is asked of."""
    return [d.served_name for d in spec.deployments]
