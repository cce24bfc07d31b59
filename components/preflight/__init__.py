"""Preflight checks that run at preview, before anything changes on the machines.

``fit``: will the model fit the layout's memory?  Pure arithmetic, no hosts (``stack_fit``
runs it on a stack config, ``model_source`` finds the model's config).
``probes``: the checks that run on the nodes themselves (engine knows the model, fabric is up);
``bandwidth``: the optional all-reduce across a multi-node deployment's nodes.
"""

from components.preflight.bandwidth import FabricBandwidth
from components.preflight.fit import (
    DEFAULT_MEMORY_FRACTION,
    DEFAULT_OVERHEAD_BYTES_PER_GPU,
    GB10_USABLE_BYTES_PER_GPU,
    MAX_RECOMMENDED_MEMORY_FRACTION,
    RTX_PRO_6000_USABLE_BYTES_PER_GPU,
    FitReport,
    GpuFit,
    Layout,
    ModelDoesNotFitError,
    NodeSpec,
    check_fit,
)
from components.preflight.model_facts import (
    GB,
    KV_DTYPE_BYTES,
    GiB,
    ModelFacts,
    kv_dtype_bytes,
    model_facts_from_config,
    safetensors_dir_bytes,
    weight_bytes_from_index,
)
from components.preflight.probes import EngineProbe, FabricCheck

__all__ = [
    "EngineProbe",
    "FabricBandwidth",
    "FabricCheck",
    "DEFAULT_MEMORY_FRACTION",
    "DEFAULT_OVERHEAD_BYTES_PER_GPU",
    "GB",
    "GB10_USABLE_BYTES_PER_GPU",
    "GiB",
    "KV_DTYPE_BYTES",
    "MAX_RECOMMENDED_MEMORY_FRACTION",
    "RTX_PRO_6000_USABLE_BYTES_PER_GPU",
    "FitReport",
    "GpuFit",
    "Layout",
    "ModelDoesNotFitError",
    "ModelFacts",
    "NodeSpec",
    "check_fit",
    "kv_dtype_bytes",
    "model_facts_from_config",
    "safetensors_dir_bytes",
    "weight_bytes_from_index",
]
