"""The Pulumi program: read this stack's config, build the serving stack, export its endpoints."""

import os
import sys

import pulumi

from components.config import ConfigError, load_from_pulumi
from components.config.sanity import sanity_warnings
from components.facts.observer import ObserveError
from components.monitoring.deploy import monitoring_for
from components.operator import reaper
from components.operator.metrics import file_sd, write_file_sd
from components.sizing.ledger import ledger_entry
from components.sizing.stack_fit import PreflightError, check_stack_fit
from components.serving.stack import ServingStack, ServingStackArgs
from components.steps.failure import BAIL_EXIT_CODE, quiet_when_the_engine_stops

# If the CLI is killed mid-run, its language host and providers are ended with it.
reaper.start()
# When a step fails, the engine stops the program: it leaves without a traceback.
quiet_when_the_engine_stops()

try:
    spec = load_from_pulumi()
    # Offline: a preview that opens no connection to any node (CI previews of hardware stacks).
    if os.environ.get("BLACKWELL_SERVING_OFFLINE") == "1":
        spec = spec.model_copy(update={"offline": True})
    if spec.offline and not pulumi.runtime.is_dry_run():
        raise ConfigError("offline mode is for previews only; unset BLACKWELL_SERVING_OFFLINE "
                          "(or blackwell-serving:offline) to change the nodes")
    for warning in sanity_warnings(spec):  # what works, at a cost the operator should know
        pulumi.log.warn(warning)
    fits = check_stack_fit(spec, spec.offline, pulumi.log.info)
    # Online, each node is probed once (read-only) so that the plan sees drift on the nodes.
    stack = ServingStack(pulumi.get_stack(), ServingStackArgs(spec, observe=not spec.offline,
                                                                monitoring=monitoring_for))
except ObserveError as err:
    # Raised in `up` once every step is declared; the SDK would still send the declarations to
    # the engine after an exception. Leave before it does, so that nothing runs on any node.
    pulumi.log.error(str(err))
    sys.stdout.flush()
    os._exit(BAIL_EXIT_CODE)
except (ConfigError, PreflightError) as err:
    # A RunError is printed as its message alone: no traceback for a config mistake.
    raise pulumi.RunError(str(err)) from None

pulumi.export("endpoints", stack.endpoints)
pulumi.export("memory_fit", {f.deployment: f.lines() for f in fits})
# The memory ledger: each engine's predicted KV cache and memory beside its own figures after the
# health gate (components/sizing/ledger.py).
pulumi.export("memory_ledger", {
    d.name: stack.deployments[d.name].health.stdout.apply(lambda out, d=d, p=f.prediction: ledger_entry(d, p, out))
    for d, f in zip(spec.deployments, fits)})
for name, deployment in stack.deployments.items():
    pulumi.export(f"{name}_sample_completion", deployment.sample)
for name, bus_gbps in stack.bus_gbps.items():
    pulumi.export(f"{name}_fabric_bus_gbps", bus_gbps)
if stack.monitoring is not None:  # Prometheus on its node (components/monitoring/deploy.py)
    pulumi.export("prometheus", stack.monitoring.url)
if stack.gateway is not None:  # one endpoint for every model (components/resources/gateway.py)
    pulumi.export("gateway", {"endpoint": stack.gateway.endpoint, "models": stack.gateway.models})
# Per deployment with a benchmark: decode_tok_s, ttft_ms, aggregate_tok_s, concurrency (components/resources/benchmark.py).
pulumi.export("benchmark", {n: d.figures for n, d in stack.deployments.items() if d.figures is not None})
# The engines' /metrics as Prometheus file_sd target groups, also written on this machine by `up`.
pulumi.export("metrics", file_sd(pulumi.get_stack(), spec))
if not pulumi.runtime.is_dry_run():
    path, written = write_file_sd(pulumi.get_stack(), spec)
    pulumi.log.info(f"Prometheus scrape config {path}" + (" written" if written else " unchanged"))
