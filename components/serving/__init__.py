"""The composition root: a deployment (its runtime, its ranks' units, its Ray cluster, its health
gate) and ServingStack, which wires a stack config's nodes, images, models, deployments, gateway
and checks out of the components below it."""
