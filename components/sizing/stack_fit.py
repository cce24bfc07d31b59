"""The memory-fit check of every deployment of a stack config, at preview: a layout that cannot
fit stops the plan with the numbers and the ways out, before any unit is stopped. Then, per node
that several deployments share, what they need there added up against the node's memory: each
engine's weights, KV cache and overhead on its GPUs of that node (the fit arithmetic of fit.py),
and, on unified memory (gb10, cpu), the object store of every Ray cluster with a node there."""

from __future__ import annotations

from dataclasses import dataclass

from components.config.sanity import object_store_nodes
from components.config.schema import DeploymentSpec, StackSpec
from components.engines import ModelFileError, engine_of
from components.sizing.fit import FitReport, Layout, NodeSpec, check_fit
from components.sizing.ledger import Prediction, predict
from components.sizing.model_facts import GB, model_facts_from_config
from components.sizing.model_source import ModelConfigError, ModelFactsUnavailable, config_and_weight_bytes


@dataclass(frozen=True)
class DeploymentFit:
    deployment: str
    source: str
    report: FitReport | None      # None when the model's config could not be read
    note: str = ""
    prediction: Prediction | None = None

    def lines(self) -> list[str]:
        if self.report is None:
            return [f"fit of {self.deployment}: not checked ({self.note})"]
        head = f"fit of {self.deployment} ({self.source}): " + ("fits" if self.report.fits else "DOES NOT FIT")
        tail = [f"  {self.prediction.line(self.report.max_model_len)}"] if self.prediction else []
        return [head, *(f"  {line}" for line in self.report.summary_lines()), *tail]


def layout(spec: StackSpec, d: DeploymentSpec) -> Layout:
    nodes = tuple(NodeSpec(name=n, gpu_count=spec.node(n).gpu.count,
                           usable_bytes_per_gpu=int(spec.node(n).gpu.memory_gb * GB)) for n in d.engine_nodes)
    return Layout(tensor_parallel_size=d.tensor_parallel, pipeline_parallel_size=d.pipeline_parallel, nodes=nodes)


def deployment_fit(spec: StackSpec, d: DeploymentSpec, offline: bool) -> DeploymentFit:
    try:
        model = spec.model(d.model)
        (config, weight_bytes), source = engine_of(d).fit_inputs(d, model) or config_and_weight_bytes(model, offline)
    except ModelFactsUnavailable as exc:
        return DeploymentFit(d.name, "", None, str(exc))
    except (ModelConfigError, ModelFileError) as exc:
        raise PreflightError(f"deployment {d.name}: {exc}\nNothing was changed on any node.") from None
    try:
        facts = model_facts_from_config(config, weight_bytes=weight_bytes)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise PreflightError(f"deployment {d.name}: the config.json of model {d.model} ({source}) is not a model "
                             f"config the fit can read ({exc.__class__.__name__}: {exc}); fix: check its "
                             f"architecture and size fields\nNothing was changed on any node.") from None
    engine = engine_of(d)
    report = check_fit(facts, layout(spec, d), max_model_len=d.max_model_len, max_num_seqs=d.max_num_seqs or 1,
                       kv_cache_dtype=d.kv_cache_dtype, memory_fraction=engine.memory_budget_fraction(d),
                       smaller_kv_dtype=engine.smaller_kv_dtype, fraction_flag=engine.memory_fraction_flag)
    return DeploymentFit(d.name, source, report, prediction=predict(d, report))


def stack_fit(spec: StackSpec, offline: bool) -> list[DeploymentFit]:
    return [deployment_fit(spec, d, offline) for d in spec.deployments]




@dataclass(frozen=True)
class NodeShare:
    """What one deployment needs on one node."""
    index: int           # the deployment's index in deployments:
    deployment: str
    what: str
    bytes: int


def node_shares(spec: StackSpec, fits: list[DeploymentFit]) -> dict[str, list[NodeShare]]:
    """node → what each deployment needs there (engines whose model could not be read: not counted)."""
    shares: dict[str, list[NodeShare]] = {}
    for i, (d, fit) in enumerate(zip(spec.deployments, fits)):
        if fit.report is not None:
            for n in dict.fromkeys(g.node for g in fit.report.gpus):
                gpus = [g for g in fit.report.gpus if g.node == n]
                shares.setdefault(n, []).append(NodeShare(
                    i, d.name, f"weights + KV + overhead on {len(gpus)} GPU{'s' if len(gpus) > 1 else ''}",
                    sum(g.needed_bytes for g in gpus)))
        for n in object_store_nodes(spec, d):
            shares.setdefault(n, []).append(NodeShare(
                i, d.name, "its Ray object store, ray.object_store_gb", int(spec.ray.object_store_gb * GB)))
    return shares


def shared_node_problems(spec: StackSpec, fits: list[DeploymentFit]) -> list[str]:
    """One "key: what; fix: how" line per node that the deployments sharing it overfill."""
    problems: list[str] = []
    for n, shares in node_shares(spec, fits).items():
        if len({s.index for s in shares}) < 2:
            continue
        node = spec.node(n)
        memory = int(node.gpu.memory_gb * GB) * node.gpu.count
        total = sum(s.bytes for s in shares)
        if total <= memory:
            continue
        last = max(s.index for s in shares)
        d = spec.deployments[last]
        parts = ", ".join(f"deployment '{s.deployment}' (deployments[{s.index}]) {_gb(s.bytes)} ({s.what})"
                          for s in shares)
        problems.append(
            f"deployments[{last}].nodes[{d.nodes.index(n)}]: node '{n}' cannot hold every deployment that shares it: "
            f"{parts} = {_gb(total)} of its {_gb(memory)} (gpu.memory_gb {node.gpu.memory_gb:g} × gpu.count "
            f"{node.gpu.count}); short by {_gb(total - memory)}; fix: move deployment '{d.name}' to other nodes, or "
            f"shrink what the deployments need there (max_model_len, max_num_seqs, kv_cache_dtype: fp8, "
            f"ray.object_store_gb)")
    return problems


def shared_node_lines(spec: StackSpec, fits: list[DeploymentFit]) -> list[str]:
    """The log lines of the nodes that several deployments share."""
    lines = []
    for n, shares in node_shares(spec, fits).items():
        if len({s.index for s in shares}) < 2:
            continue
        node = spec.node(n)
        memory = int(node.gpu.memory_gb * GB) * node.gpu.count
        total = sum(s.bytes for s in shares)
        lines.append(f"node {n}, shared by {len({s.index for s in shares})} deployments: "
                     + " + ".join(f"{s.deployment} {_gb(s.bytes)}" for s in shares)
                     + f" = {_gb(total)} of {_gb(memory)}: " + ("fits" if total <= memory else "DOES NOT FIT"))
    return lines


def _gb(n: float) -> str:
    return f"{n / GB:.1f} GB"


class PreflightError(Exception):
    """A plan that cannot work; str() is the operator-facing message."""


def check_stack_fit(spec: StackSpec, offline: bool, log) -> list[DeploymentFit]:
    """Log each deployment's fit; stop the plan when one cannot fit."""
    fits = stack_fit(spec, offline)
    for fit in fits:
        for line in fit.lines():
            log(line)
    for line in shared_node_lines(spec, fits):
        log(line)
    unfit = [f for f in fits if f.report is not None and not f.report.fits]
    if unfit:
        raise PreflightError("\n\n".join(f"deployment {f.deployment}: {f.report.message}" for f in unfit)
                             + "\nNothing was changed on any node.")
    shared = shared_node_problems(spec, fits)
    if shared:
        raise PreflightError("the deployments that share a node do not fit it together:\n"
                             + "\n".join(f"  {p}" for p in shared) + "\nNothing was changed on any node.")
    return fits
