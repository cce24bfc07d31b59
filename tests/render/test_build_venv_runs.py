"""The venv build script (templates/scripts/build-venv.sh.j2) run for real with bash on this
machine: a stand-in engine package in a local git repository (argparse flags, an in-tree build
backend so that pip needs no index), installed with pip --no-deps -e into a venv under a temporary
root. It checks what the script promises: built once per recipe digest, verified before `current`
is switched, a failed verify leaves the venv in use as it was, a new recipe is switched to by a
rename with `previous` kept, and the delete script removes the entry's venvs. What it cannot
check here: a real SGLang build with a CUDA 13 torch (no GPU, no SGLang source on this machine)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from components.config.schema import ImageSpec
from tests.tools import require
from components.config.venv import GitSource, VenvSpec
from components.steps.render import render
from components.resources.venv import build_script, venv_dir, verify_program

# The interpreter the venvs are made from: this one's base (a real path, not a shim or a venv).
PYTHON = getattr(sys, "_base_executable", sys.executable)

BACKEND = '''
import base64, hashlib, os, zipfile

NAME, VERSION = "sglang", "0.0.1"


def _wheel(directory, files):
    dist = f"{NAME}-{VERSION}.dist-info"
    files = {**files, f"{dist}/METADATA": f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
    name, record = f"{NAME}-{VERSION}-py3-none-any.whl", []
    with zipfile.ZipFile(os.path.join(directory, name), "w") as z:
        for path, text in files.items():
            data = text.encode()
            z.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        z.writestr(f"{dist}/RECORD", "\\n".join(record + [f"{dist}/RECORD,,"]) + "\\n")
    return name


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {"sglang_src.pth": os.path.abspath("src") + "\\n"})


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return build_editable(wheel_directory)
'''


def engine_repo(path: Path, flags: list[str]) -> str:
    """A git repository of a stand-in `sglang` whose ServerArgs parser knows `flags` (each taking a
    value); its commit."""
    (path / "src" / "sglang" / "srt").mkdir(parents=True)
    (path / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                                         'backend-path = ["."]\n')
    (path / "backend.py").write_text(BACKEND)
    (path / "src" / "sglang" / "__init__.py").write_text('__version__ = "0.0.1"\n')
    (path / "src" / "sglang" / "srt" / "__init__.py").write_text("")
    (path / "src" / "sglang" / "srt" / "server_args.py").write_text(
        "class ServerArgs:\n    @staticmethod\n    def add_cli_args(p):\n"
        + "".join(f"        p.add_argument({f!r})\n" for f in flags))
    git = lambda *a: subprocess.run([require("git"), "-C", str(path), *a], check=True, capture_output=True, text=True)
    git("init", "-q")
    git("add", ".")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "engine")
    return git("rev-parse", "HEAD").stdout.strip()


def command_line(*flags: str) -> list[str]:
    return ["python3", "-m", "sglang.launch_server", "--model-path", "/model", *flags]


def image(root: Path, repo: Path, commit: str, python: str = PYTHON) -> ImageSpec:
    """An entry pointing at the local repository (the schema takes only https/ssh URLs: built
    without validation for this test)."""
    source = GitSource.model_construct(git=str(repo), commit=commit, subdirectory=".", extras=[])
    venv = VenvSpec.model_construct(python=python, installer="pip", source=source, wheels=[], requirements=[],
                                    no_deps_over=[], patches=[], root=str(root), build_timeout_s=600)
    return ImageSpec.model_construct(name="engine", runtime="venv", venv=venv, base=None, transformers=None, pip=[],
                                     pip_ca_bundle=None, build_node=None, nodes=["n"])


def run(script: str, logs: Path, stdin: str = verify_program(["sglang"])) -> subprocess.CompletedProcess:
    # The progress log goes to the test's folder, not /var/log.
    script = script.replace("progress_log=/var/log/blackwell-serving/", f"progress_log={logs}/")
    env = {"PATH": os.environ["PATH"], "HOME": str(logs), "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run(["bash", "-c", script], input=stdin, capture_output=True, text=True, env=env, timeout=600)


def test_build_verify_switch_rebuild_and_remove(tmp_path):
    repo = tmp_path / "repo"
    commit = engine_repo(repo, ["--model-path", "--tp", "--fp4-gemm-runner-backend"])
    root, logs = tmp_path / "venvs", tmp_path / "logs"
    logs.mkdir()
    img = image(root, repo, commit)
    entry = Path(venv_dir(img))
    checks = {"sglang": [command_line("--tp", "4", "--fp4-gemm-runner-backend", "flashinfer_cudnn")]}

    first = run(build_script(img, commit, [], checks), logs)
    assert first.returncode == 0, first.stderr
    digest = first.stdout.strip().rsplit("venv-id=", 1)[1]
    assert os.readlink(entry / "current") == digest
    assert (entry / digest / ".bws-built").is_file()
    assert "its own parser (sglang.srt.server_args.ServerArgs.add_cli_args) checked 6 arguments" in first.stderr
    assert (entry / digest / "bin" / "python3").exists()

    # Again: nothing is built, the verify runs again, current stays.
    mark = (entry / digest / ".bws-built").stat().st_mtime_ns
    again = run(build_script(img, commit, [], checks), logs)
    assert again.returncode == 0 and f"venv {digest} already built" in again.stderr
    assert (entry / digest / ".bws-built").stat().st_mtime_ns == mark

    # A flag the engine does not know: the step fails, the venv in use stays in use.
    bad = run(build_script(img, commit, [], {"sglang": [command_line("--tp", "4", "--fp4-gemm-backend", "x")]}), logs)
    assert bad.returncode == 1
    assert "--fp4-gemm-backend: this sglang (0.0.1) calls it --fp4-gemm-runner-backend" in bad.stderr
    assert f"still in use: {digest}" in bad.stderr
    assert os.readlink(entry / "current") == digest

    # A new commit: a new digest directory, built, verified, switched to; the old one kept as previous.
    (repo / "src" / "sglang" / "__init__.py").write_text('__version__ = "0.0.2"\n')
    subprocess.run([require("git"), "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "v2"],
                   check=True)
    commit2 = subprocess.run([require("git"), "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    second = run(build_script(img, commit2, [], checks), logs)
    assert second.returncode == 0, second.stderr
    digest2 = second.stdout.strip().rsplit("venv-id=", 1)[1]
    assert digest2 != digest and os.readlink(entry / "current") == digest2
    assert os.readlink(entry / "previous") == digest
    assert "sglang 0.0.2 imports" in second.stderr

    # Destroy: every venv of the entry is gone.
    removed = run(render("scripts/remove-venv.sh.j2", name=img.name, root=str(entry)), logs, stdin="")
    assert removed.returncode == 0 and not entry.exists()


def test_a_half_built_venv_is_built_again(tmp_path):
    repo = tmp_path / "repo"
    commit = engine_repo(repo, ["--model-path", "--tp"])
    logs = tmp_path / "logs"
    logs.mkdir()
    img = image(tmp_path / "venvs", repo, commit)
    script = build_script(img, commit, [], {"sglang": [command_line("--tp", "1")]})
    digest = script.split("digest=", 1)[1].split("\n", 1)[0]
    leftover = Path(venv_dir(img)) / digest
    leftover.mkdir(parents=True)
    (leftover / "junk").write_text("from an interrupted run")
    done = run(script, logs)
    assert done.returncode == 0, done.stderr
    assert not (leftover / "junk").exists() and (leftover / ".bws-built").is_file()


def test_a_missing_python_stops_with_the_fix(tmp_path):
    repo = tmp_path / "repo"
    commit = engine_repo(repo, ["--model-path", "--tp"])
    logs = tmp_path / "logs"
    logs.mkdir()
    img = image(tmp_path / "venvs", repo, commit, python="/nonexistent/python3")
    done = run(build_script(img, commit, [], {"sglang": [command_line("--tp", "1")]}), logs)
    assert done.returncode == 1 and "no python at /nonexistent/python3" in done.stderr
    assert not (Path(venv_dir(img)) / "current").exists()
