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
from components.steps.render import TEMPLATES
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


@pytest.mark.parametrize("module", ["components/serving/stack.py", "components/serving/deployment.py"])
def test_the_wiring_has_no_branch_on_an_engine_or_a_runtime(module):
    text = (ROOT / module).read_text()
    names = "|".join(map(re.escape, [*ENGINES, *RUNTIMES]))
    found = re.findall(rf"""[=!]=\s*["'](?:{names})["']|runtime\s*[=!]=|\.engine\s*[=!]=|isinstance\([^)]*Venv""", text)
    assert not found, f"{module} branches on an engine or a runtime: {found}"


class Toy(Engine):
    """A third engine defined here alone: the wiring must take it through the interface."""
    name = "toy"
    launches = frozenset({"single", "native"})
    api_key_var = "TOY_API_KEY"
    health_path = "/healthz"
    probe_module = "engine_vllm"   # an in-image module that exists (a real engine brings its own)

    def argv(self, d, model_path, rank=0, head_address=None):
        return ["toy-server", "--model", model_path, "--port", str(d.port), "--rank", str(rank)]

    def restart(self, d):
        return "always"

    def watches_ranks(self, d):
        return True


def test_a_new_engine_needs_no_change_to_the_wiring(monkeypatch):
    from tests.unit import mocked

    monkeypatch.setitem(ENGINES, "toy", Toy())
    spec = mocked.load_stack_file(mocked.REPO / "stacks" / "Pulumi.lab.yaml")
    native = next(d for d in spec.deployments if d.topology == "native")

    # The schema's engines are fixed when it is imported: the toy enters after the mocks' own
    # validation of the spec (the lab's file secrets pointed at a stand-in file).
    def to_toy(valid):
        swapped = [d.model_copy(update={"engine": "toy"}) if d.name == native.name else d for d in valid.deployments]
        return valid.model_copy(update={"deployments": swapped})
    swap = mocked._file_secrets_to_sentinel
    monkeypatch.setattr(mocked, "_file_secrets_to_sentinel", lambda s: to_toy(swap(s)))
    snap = mocked.snapshot("lab", spec)
    assert next(d for d in snap.spec.deployments if d.name == native.name).engine == "toy"
    units = [u for u in snap.units if u.unit_name == f"bws-{native.name}.service"]
    assert len(units) == len(native.nodes)
    for rank, unit in enumerate(sorted(units, key=lambda u: native.nodes.index(u.node.name))):
        words = re.findall(r'"([^"]*)"', unit.unit_text)   # ExecStart's quoted words
        start = words.index("toy-server")
        assert words[start:start + 7] == ["toy-server", "--model", words[start + 2], "--port", str(native.port),
                                          "--rank", str(rank)]
        assert "Restart=always" in unit.unit_text
    assert any(url.endswith(f":{native.port}/healthz") for w in snap.watches.values() for url in w.urls)
    watches = [r for r in snap.steps() if r.name == f"{native.name}-rank1-watch-timer"]
    assert watches, "the toy engine asked for rank watches"


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_kv_dtype_an_engine_takes_has_its_bytes_in_the_fit(engine):
    """The schema accepts an engine's own KV dtypes; the fit must then know each one's size."""
    from components.sizing.model_facts import kv_dtype_bytes
    e = ENGINES[engine]
    assert e.kv_cache_dtypes[0] == "auto"
    for dtype in e.kv_cache_dtypes:
        assert 0 < kv_dtype_bytes(dtype, 2) <= 4
    if e.smaller_kv_dtype is not None:
        assert e.smaller_kv_dtype in e.kv_cache_dtypes and kv_dtype_bytes(e.smaller_kv_dtype, 2) < 2


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_discovery_finds_each_engine_by_its_own_programs(engine):
    """A new engine's servers are found on the machines without an edit of discovery's list."""
    from components.discover.engines import is_engine
    assert ENGINES[engine].programs
    for program in ENGINES[engine].programs:
        assert is_engine(f"/opt/bin/{program} --port 8000", []), program
    assert not is_engine("/usr/bin/python3 -m http.server 8000", [])
