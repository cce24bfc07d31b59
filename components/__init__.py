"""blackwell-serving: Pulumi components that deploy LLM serving stacks on NVIDIA Blackwell nodes.

The package is built in floors, one per folder (FLOORS, bottom first): a module imports only from
its own folder or the floors below it, at run time and in type checking alike
(tests/unit/test_layers.py), so the layout shows the architecture and a lower floor never reaches
up. The README's layout and docs/extending.md list the floors in this order (checked there too).
"""

from pathlib import Path

# (folder or module, what it holds), bottom first.
FLOORS: tuple[tuple[str, str], ...] = (
    ("components", "this file: the floors and where the templates are"),
    ("names", "every generated unit, container and path name"),
    ("platforms", "one module per GPU kind (gb10, rtx-pro-6000, cpu)"),
    ("engines", "one module per engine behind one interface"),
    ("launches", "how an engine's ranks spread over its nodes: single, ray, native"),
    ("config", "the stack schema, its loading and its cross-key checks"),
    ("steps", "how a rendered script becomes a step on a node, what a step is, the failure block, the rollback"),
    ("sizing", "will a model fit: its facts, the fit, the memory ledger (arithmetic, no node)"),
    ("facts", "one module per node fact, and the program's one probe per node"),
    ("resources", "the Pulumi components a stack is made of"),
    ("runtimes", "how an engine's ranks run: a container or a venv"),
    ("preflight", "the checks on the nodes that gate the first change"),
    ("serving", "a deployment, and ServingStack: the composition root"),
    ("operator", "what runs on the operator's machine around a run"),
    ("backend", "the state's backend: a team's PostgreSQL and its per-stack guard"),
    ("todo", "the todo list and the resumption of an interrupted run (CLI)"),
    ("discover", "a stack config from the machines as found (CLI)"),
    ("monitoring", "Prometheus rules, alerts, the Grafana dashboard and the status page"),
)

# The project's templates/ beside this package (a checkout, or `pip install -e`), else the copy an
# installed package carries as components/templates (pyproject.toml maps it there). Here, on the
# bottom floor, so that steps/render.py and an engine's own module (engines/llamacpp.py) find it alike.
_PACKAGE = Path(__file__).resolve().parent
TEMPLATES = next((d for d in (_PACKAGE.parent / "templates", _PACKAGE / "templates") if d.is_dir()),
                 _PACKAGE.parent / "templates")
