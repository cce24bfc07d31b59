"""The fetch script of a hub GGUF model (templates/scripts/fetch-model.sh.j2 with allow_patterns)
run for real with bash on this machine: the real huggingface_hub of the project's venv (the
node's-python downloader) against the Hub stand-in (tests/lab/hub.py) on loopback, serving a GGUF
repository with two quantizations, a file split in two parts and a README. Only the named files
are requested and cached; the cache passes its own completeness check (the manifest); the same
files again are "already cached"; other files are downloaded again; a name no file matches fails
with its fix. The lab test (tests/lab/test_lab_gguf_hub.py) does the same on a node, in a container."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from components.engines.llamacpp import model_file_patterns
from components.steps.render import render
from tests.lab.hub import HubStandIn
from tests.tools import require

REPO, COMMIT = "lab/tiny-GGUF", "0123456789abcdef0123456789abcdef01234567"
FILES = {"tiny-Q4_K_M.gguf": b"GGUF q4" * 100, "tiny-Q8_0.gguf": b"GGUF q8" * 300,
         "tiny-F16-00001-of-00002.gguf": b"GGUF f16 a" * 50, "tiny-F16-00002-of-00002.gguf": b"f16 b" * 50,
         "README.md": b"# tiny\n"}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    repo = tmp_path_factory.mktemp("repo")
    for name, data in FILES.items():
        (repo / name).write_bytes(data)
    with HubStandIn(REPO, COMMIT, repo, host="127.0.0.1") as stand_in:
        yield stand_in


def fetch(hub: HubStandIn, root: Path, gguf: str) -> subprocess.CompletedProcess:
    script = render("scripts/fetch-model.sh.j2", kind="hub", repo=REPO, revision=COMMIT, image=None,
                    python=sys.executable, check_downloader=False, allow_patterns=model_file_patterns(gguf),
                    with_token=False, endpoint=hub.url, source_path="", model_name="tiny-gguf",
                    final_dir=str(root / "models/tiny"), staging_dir=str(root / "models/.staging/tiny"),
                    log_file=str(root / "fetch.log"))
    return subprocess.run([require("bash"), "-c", script], capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "HF_HUB_DISABLE_TELEMETRY": "1", "HOME": str(root)})


def cached(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "models/tiny").iterdir() if not p.name.startswith(".blackwell-"))


def downloaded(hub: HubStandIn) -> set[str]:
    return {path.rsplit("/", 1)[1] for method, path, _ in hub.requests if method == "GET" and "/resolve/" in path}


def test_only_the_named_file_is_downloaded_and_the_cache_is_complete(hub, tmp_path):
    hub.requests.clear()
    done = fetch(hub, tmp_path, "tiny-Q8_0.gguf")
    assert done.returncode == 0, done.stderr[-3000:]
    assert cached(tmp_path) == ["tiny-Q8_0.gguf"]
    assert downloaded(hub) == {"tiny-Q8_0.gguf"}
    final = tmp_path / "models/tiny"
    assert subprocess.run(["sha256sum", "-c", "--quiet", ".blackwell-manifest.sha256"], cwd=final).returncode == 0
    assert (final / ".blackwell-allow-patterns").read_text() == "tiny-Q8_0.gguf\n"

    hub.requests.clear()
    again = fetch(hub, tmp_path, "tiny-Q8_0.gguf")
    assert again.returncode == 0 and "already cached" in again.stderr and not downloaded(hub), again.stderr


def test_another_file_is_downloaded_again_and_a_split_file_brings_all_its_parts(hub, tmp_path):
    assert fetch(hub, tmp_path, "tiny-Q4_K_M.gguf").returncode == 0
    hub.requests.clear()
    done = fetch(hub, tmp_path, "tiny-F16-00001-of-00002.gguf")
    assert done.returncode == 0, done.stderr[-3000:]
    assert cached(tmp_path) == ["tiny-F16-00001-of-00002.gguf", "tiny-F16-00002-of-00002.gguf"]
    assert downloaded(hub) == {"tiny-F16-00001-of-00002.gguf", "tiny-F16-00002-of-00002.gguf"}


def test_a_file_the_repository_lacks_fails_with_the_fix(hub, tmp_path):
    done = fetch(hub, tmp_path, "tiny-Q5_K_M.gguf")
    assert done.returncode == 1
    assert (f"no file of {REPO}@{COMMIT} matches tiny-Q5_K_M.gguf; fix: name one of its files in the "
            "deployment's extra_args: [--model, FILE.gguf]") in done.stderr
    assert not (tmp_path / "models/tiny").exists()
