"""blackwell-serving: Pulumi components that deploy LLM serving stacks on NVIDIA Blackwell nodes.

One module per concept: config/ (the stack schema), node, services (retired / kept units),
image (build and sync), model (cache), unit (systemd), fabric (network env), cluster (Ray),
deployment (engine + health gate), stack (the wiring), render (templates), remote (commands),
engines/ (one module per engine behind one interface), runtimes/ (docker, venv),
preflight/ (checks that stop a plan before it changes anything).
"""
