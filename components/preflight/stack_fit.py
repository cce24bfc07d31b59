"""The memory-fit check of every deployment of a stack config, at preview: a layout that cannot
fit stops the plan with the numbers and the ways out, before any unit is stopped."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.schema import DeploymentSpec, StackSpec
from .fit import FitReport, Layout, NodeSpec, check_fit
from .model_facts import GB, model_facts_from_config
from .model_source import ModelConfigError, ModelFactsUnavailable, config_and_weight_bytes


@dataclass(frozen=True)
class DeploymentFit:
    deployment: str
    source: str
    report: FitReport | None      # None when the model's config could not be read
    note: str = ""

    def lines(self) -> list[str]:
        if self.report is None:
            return [f"fit of {self.deployment}: not checked ({self.note})"]
        head = f"fit of {self.deployment} ({self.source}): " + ("fits" if self.report.fits else "DOES NOT FIT")
        return [head, *(f"  {line}" for line in self.report.summary_lines())]


def layout(spec: StackSpec, d: DeploymentSpec) -> Layout:
    nodes = tuple(NodeSpec(name=n, gpu_count=spec.node(n).gpu.count,
                           usable_bytes_per_gpu=int(spec.node(n).gpu.memory_gb * GB)) for n in d.engine_nodes)
    return Layout(tensor_parallel_size=d.tensor_parallel, pipeline_parallel_size=d.pipeline_parallel, nodes=nodes)


def deployment_fit(spec: StackSpec, d: DeploymentSpec, offline: bool) -> DeploymentFit:
    try:
        (config, weight_bytes), source = config_and_weight_bytes(spec.model(d.model), offline)
    except ModelFactsUnavailable as exc:
        return DeploymentFit(d.name, "", None, str(exc))
    except ModelConfigError as exc:
        raise PreflightError(f"deployment {d.name}: {exc}\nNothing was changed on any node.") from None
    try:
        facts = model_facts_from_config(config, weight_bytes=weight_bytes)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise PreflightError(f"deployment {d.name}: the config.json of model {d.model} ({source}) is not a model "
                             f"config the fit can read ({exc.__class__.__name__}: {exc}); fix: check its "
                             f"architecture and size fields\nNothing was changed on any node.") from None
    report = check_fit(facts, layout(spec, d), max_model_len=d.max_model_len, max_num_seqs=d.max_num_seqs or 1,
                       kv_cache_dtype=d.kv_cache_dtype, memory_fraction=d.memory_fraction)
    return DeploymentFit(d.name, source, report)


def stack_fit(spec: StackSpec, offline: bool) -> list[DeploymentFit]:
    return [deployment_fit(spec, d, offline) for d in spec.deployments]


class PreflightError(Exception):
    """A plan that cannot work; str() is the operator-facing message."""


def check_stack_fit(spec: StackSpec, offline: bool, log) -> list[DeploymentFit]:
    """Log each deployment's fit; stop the plan when one cannot fit."""
    fits = stack_fit(spec, offline)
    for fit in fits:
        for line in fit.lines():
            log(line)
    unfit = [f for f in fits if f.report is not None and not f.report.fits]
    if unfit:
        raise PreflightError("\n\n".join(f"deployment {f.deployment}: {f.report.message}" for f in unfit)
                             + "\nNothing was changed on any node.")
    return fits
