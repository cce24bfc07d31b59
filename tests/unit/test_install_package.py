"""The package installs: `pip install .` gives every module and every template, and another
program, outside this repository, builds a shipped stack from the installed package alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Run outside the repository with the installed copy first on sys.path: import every module,
# then build the stack file given under Pulumi's mocks and print each resource's URN name.
PROGRAM = textwrap.dedent('''
    import importlib, pkgutil, sys
    from pathlib import Path
    import pulumi
    import components
    from components.steps.render import TEMPLATES
    installed = Path(sys.argv[1])
    assert Path(components.__file__).is_relative_to(installed), components.__file__
    assert TEMPLATES.is_relative_to(installed), TEMPLATES
    for m in pkgutil.walk_packages(components.__path__, "components."):
        if not m.name.endswith("__main__"):
            importlib.import_module(m.name)

    names = []

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args):
            names.append(args.name)  # called from the mock engine's threads: printed at the end
            outputs = dict(args.inputs)
            outputs.setdefault("stdout", "")
            return f"{args.name}-id", outputs
        def call(self, args):
            return {}

    @pulumi.runtime.test  # runs the program and waits for every registration the mock engine gets
    def build():
        pulumi.runtime.set_mocks(Mocks(), project="blackwell-serving", stack=sys.argv[3], preview=True)
        from components.config import load_stack_file
        from components.monitoring.deploy import monitoring_for
        from components.serving.stack import ServingStack, ServingStackArgs
        ServingStack(sys.argv[3], ServingStackArgs(load_stack_file(Path(sys.argv[2])), monitoring=monitoring_for))

    build()
    print("\\n".join(f"resource {n}" for n in names))
''')


def test_the_package_list_is_every_package_of_the_tree():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    tree = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "components").rglob("__init__.py")}
    assert listed == tree | {"components.templates"}


def test_pip_install_gives_every_module_and_template_and_builds_a_stack_outside_the_repo(tmp_path):
    target, source = tmp_path / "site", tmp_path / "source"
    # the build writes build/ and *.egg-info beside the sources: a copy, not this checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "components", "templates"):
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy2)(
            REPO / name, source / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if (REPO / name).is_dir() else {}))
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                          str(source)], capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    templates = {p.relative_to(REPO / "templates") for p in (REPO / "templates").rglob("*") if p.is_file()}
    installed = {p.relative_to(target / "components" / "templates")
                 for p in (target / "components" / "templates").rglob("*") if p.is_file()}
    assert templates <= installed, templates - installed

    elsewhere = tmp_path / "another-program"
    elsewhere.mkdir()
    stack_file = shutil.copy(REPO / "stacks" / "Pulumi.spark-duo.yaml", elsewhere / "Pulumi.spark-duo.yaml")
    (elsewhere / "program.py").write_text(PROGRAM)
    env = {**os.environ, "PYTHONPATH": str(target), "BLACKWELL_SERVING_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "program.py", str(target), str(stack_file), "spark-duo"], cwd=elsewhere,
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    built = sorted(line.split()[1] for line in run.stdout.splitlines() if line.startswith("resource "))
    pinned = sorted(urn.rsplit("::", 1)[1] for urn in
                    (REPO / "tests" / "unit" / "golden" / "urns-spark-duo.txt").read_text().split())
    assert built == pinned, (sorted(set(pinned) - set(built)), sorted(set(built) - set(pinned)))
