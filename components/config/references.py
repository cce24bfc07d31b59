"""Cross-field checks of a stack config: names that refer to each other, and layouts that
cannot work. Each problem names its key path and the fix."""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.config.venv import deployment_problems as venv_deployment_problems
from components.launches import launch_of

if TYPE_CHECKING:
    from components.config.schema import StackSpec


def _unique(items, what: str, problems: list[str]) -> set[str]:
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item.name in seen:
            problems.append(f"{what}[{i}].name: '{item.name}' is used twice; fix: give each {what[:-1]} its own name")
        seen.add(item.name)
    return seen


def reference_problems(spec: "StackSpec") -> list[str]:
    problems: list[str] = []
    nodes = _unique(spec.nodes, "nodes", problems)
    images = _unique(spec.images, "images", problems)
    models = _unique(spec.models, "models", problems)
    _unique(spec.deployments, "deployments", problems)

    def need_node(path: str, name: str) -> bool:
        if name not in nodes:
            problems.append(f"{path}: unknown node '{name}'; fix: use one of {sorted(nodes)}")
            return False
        return True

    for i, img in enumerate(spec.images):
        if img.runtime == "venv":  # built on each of its nodes: no build node, no arch to match
            for j, n in enumerate(img.nodes):
                need_node(f"images[{i}].nodes[{j}]", n)
        elif need_node(f"images[{i}].build_node", img.build_node):
            arch = spec.node(img.build_node).arch
            for j, n in enumerate(img.nodes):
                if need_node(f"images[{i}].nodes[{j}]", n) and spec.node(n).arch != arch:
                    problems.append(f"images[{i}].nodes[{j}]: node '{n}' is {spec.node(n).arch} but the image is built "
                                    f"on '{img.build_node}' ({arch}); fix: build a separate image for {spec.node(n).arch}")

    for i, m in enumerate(spec.models):
        need_node(f"models[{i}].fetch_node", m.fetch_node)
        for j, n in enumerate(m.nodes):
            need_node(f"models[{i}].nodes[{j}]", n)

    for i, d in enumerate(spec.deployments):
        p = f"deployments[{i}]"
        for j, n in enumerate(d.nodes):
            need_node(f"{p}.nodes[{j}]", n)
        if d.image not in images:
            problems.append(f"{p}.image: unknown image '{d.image}'; fix: use one of {sorted(images)}")
        elif missing := [n for n in d.nodes if n not in spec.image(d.image).nodes]:
            problems.append(f"{p}.image: image '{d.image}' is not placed on {missing}; fix: add them to its nodes")
        if d.model not in models:
            problems.append(f"{p}.model: unknown model '{d.model}'; fix: use one of {sorted(models)}")
        elif missing := [n for n in d.nodes if n not in spec.model(d.model).nodes]:
            problems.append(f"{p}.model: model '{d.model}' is not cached on {missing}; fix: add them to its nodes")
        if any(n not in nodes for n in d.nodes):
            continue
        gpus = sum(spec.node(n).gpu.count for n in d.engine_nodes)
        if d.tensor_parallel * d.pipeline_parallel != gpus:
            where = "its head has" if d.executor == "head" else "its nodes have"
            problems.append(f"{p}.tensor_parallel: tensor_parallel × pipeline_parallel = "
                            f"{d.tensor_parallel * d.pipeline_parallel} but {where} {gpus} GPUs; "
                            f"fix: make the product equal the GPU count")
        if launch_of(d).spans_nodes:
            if spec.fabric is None:
                problems.append(f"{p}.topology: multi-node needs a fabric: section; fix: add fabric.netdev")
            for j, n in enumerate(d.nodes):
                if spec.node(n).fabric_address is None:
                    problems.append(f"{p}.nodes[{j}]: node '{n}' has no fabric_address; fix: set nodes[].fabric_address")

    problems += venv_deployment_problems(spec)

    for what, refs in (("retire", spec.retire), ("keep", spec.keep)):
        for i, ref in enumerate(refs):
            need_node(f"{what}[{i}].node", ref.node)
    retired = {(r.node, r.unit) for r in spec.retire}
    for i, k in enumerate(spec.keep):
        if (k.node, k.unit) in retired:
            problems.append(f"keep[{i}]: '{k.unit}' on '{k.node}' is also retired; fix: remove it from one list")
    return problems
