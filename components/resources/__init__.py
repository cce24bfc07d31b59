"""The Pulumi components a stack is made of: a node, a unit, an image, a model cache, a Ray
cluster, the gateway, ... each one step or a few on its nodes (serving/ wires them)."""
