"""The Pulumi program: read this stack's config, build the serving stack, export its endpoints."""

import pulumi

from components.config import ConfigError, load_from_pulumi
from components.stack import ServingStack

try:
    spec = load_from_pulumi()
    stack = ServingStack(pulumi.get_stack(), spec)
except ConfigError as err:
    # A RunError is printed as its message alone: no traceback for a config mistake.
    raise pulumi.RunError(str(err)) from None

pulumi.export("endpoints", stack.endpoints)
for name, deployment in stack.deployments.items():
    pulumi.export(f"{name}_sample_completion", deployment.sample)
