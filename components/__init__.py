"""blackwell-serving: Pulumi components that deploy LLM serving stacks on NVIDIA Blackwell nodes.

The package by layer, each importing only from the layers before it (tests/unit/test_layers.py):
- config/      the stack schema, its loading and its cross-key checks;
- names        every generated unit, container and path name;
- steps/       how a rendered script (render) becomes a step on a node (remote), what a step is
               (info), type tokens, secrets, the failure block and the rollback of a failed `up`;
- facts/       one module per node fact, and the program's one probe per node (observation, observer);
- engines/     one module per engine behind one interface; runtimes/: docker or a venv;
- preflight/   the checks that stop a plan before it changes anything;
- resources/   the Pulumi components a stack is made of, and ServingStack (stack) that wires them.
Apart: operator/ (what runs on the operator's machine around a run), discover/ and todo/ (CLIs).
"""

from pathlib import Path

# The project's templates/ beside this package (a checkout, or `pip install -e`), else the copy an
# installed package carries as components/templates (pyproject.toml maps it there). Here, on the
# bottom floor, so that steps/render.py and an engine's own module (engines/llamacpp.py) find it alike.
_PACKAGE = Path(__file__).resolve().parent
TEMPLATES = next((d for d in (_PACKAGE.parent / "templates", _PACKAGE / "templates") if d.is_dir()),
                 _PACKAGE.parent / "templates")
