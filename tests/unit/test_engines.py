"""The engines and the runtimes behind their interfaces (components/engines, components/runtimes):
the schema takes exactly the registry's engines, each engine brings its in-image module with the
names the probe and the checker use, and the wiring (stack.py, deployment.py) never asks which
engine or which runtime it has."""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pytest

from components.config.schema import DeploymentSpec
from components.engines import ENGINES, Engine
from components.render import TEMPLATES
from components.runtimes import RUNTIMES

ROOT = Path(__file__).resolve().parents[2]
# What an engine's templates/scripts/engine_NAME.py gives engine_flags.py and probe_engine.py.
IN_IMAGE = {"MODULE", "DISTS", "ARGS_AFTER", "RENAMES", "known_architectures", "serve_parser", "help_argvs"}


def test_the_schema_takes_exactly_the_registered_engines():
    field = DeploymentSpec.model_fields["engine"].annotation
    assert set(typing.get_args(field)) == set(ENGINES)
    assert all(name == e.name and isinstance(e, Engine) for name, e in ENGINES.items())


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_each_engine_brings_its_in_image_module(name):
    engine = ENGINES[name]
    path = TEMPLATES / "scripts" / f"{engine.probe_module}.py"
    tree = ast.parse(path.read_text())
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assert IN_IMAGE <= defined, f"{path.name} lacks {sorted(IN_IMAGE - defined)}"
    assert engine.probe_module == f"engine_{name}"   # engine_flags.engine_module finds it by the name


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_each_engine_states_its_facts(name):
    engine = ENGINES[name]
    assert engine.launches and engine.launches <= {"single", "ray", "native"}
    assert re.fullmatch(r"[A-Z][A-Z0-9_]*", engine.api_key_var)
    assert engine.health_path.startswith("/") and engine.metrics_path.startswith("/")
    assert engine.options <= set(DeploymentSpec.model_fields)


def test_an_engine_option_is_taken_by_one_engine_only():
    owners = [key for e in ENGINES.values() for key in e.options]
    assert len(owners) == len(set(owners))


def test_the_schema_refuses_a_launch_the_engine_lacks():
    base = dict(name="x", image="i", model="m", nodes=["a", "b"], served_name="x")
    for name, engine in ENGINES.items():
        for topology in {"ray", "native"} - engine.launches:
            with pytest.raises(ValueError, match="topology"):
                DeploymentSpec(engine=name, topology=topology, **base)


def test_the_runtimes_match_the_schema():
    from components.config.schema import ImageSpec
    assert set(typing.get_args(ImageSpec.model_fields["runtime"].annotation)) == set(RUNTIMES)


@pytest.mark.parametrize("module", ["components/stack.py", "components/deployment.py"])
def test_the_wiring_has_no_branch_on_an_engine_or_a_runtime(module):
    text = (ROOT / module).read_text()
    names = "|".join(map(re.escape, [*ENGINES, *RUNTIMES]))
    found = re.findall(rf"""[=!]=\s*["'](?:{names})["']|runtime\s*[=!]=|\.engine\s*[=!]=|isinstance\([^)]*Venv""", text)
    assert not found, f"{module} branches on an engine or a runtime: {found}"
