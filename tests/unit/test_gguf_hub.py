"""A GGUF model from the hub: the engines' model_files hook (llamacpp: its file, every part of a
split one), the union ModelCache downloads (components/engines model_files), the patterns in the
rendered fetch script (quoted, as argv), and the check of an engine image that may lack the
downloader, which stops the fetch with one FAILED block before any download (a stand-in `docker`
here; the real one in tests/lab/test_lab_gguf_hub.py)."""

from __future__ import annotations

import os
import subprocess

import pytest

from components.config import load_stack_file
from components.config.schema import DeploymentSpec
from components.engines import ENGINES, model_files
from components.runtimes import downloader
from components.steps.render import render
from tests.tools import require
from tests.unit.mocked import REPO, script_of, snapshot

LLAMA = ENGINES["llamacpp"]
COMMIT = "c0ffee" * 6 + "c0ff"
LLAMA_IMAGE = "198.18.0.1:5000/lab/llama-cpp:0c1e570"


def gguf(name: str, **over) -> DeploymentSpec:
    return DeploymentSpec.model_validate({"name": "g", "engine": "llamacpp", "image": "i", "model": "m",
                                          "nodes": ["a"], "served_name": "g", "extra_args": ["--model", name], **over})


def lab_with_hub_gguf(*more_deployments: dict, **source) -> object:
    """The lab stack with its GGUF model from the hub (pinned), and more deployments of it."""
    values = load_stack_file(REPO / "stacks" / "Pulumi.lab.yaml").model_dump(mode="json")
    model = next(m for m in values["models"] if m["name"] == "tiny-gguf")
    model.update(revision=COMMIT, source={"kind": "hub", **source})
    served = next(d for d in values["deployments"] if d["model"] == "tiny-gguf")
    values["deployments"] += [{**served, **d} for d in more_deployments]
    return type(load_stack_file(REPO / "stacks" / "Pulumi.lab.yaml")).model_validate(values)


# --- the hook -------------------------------------------------------------------------------------

def test_vllm_and_sglang_take_the_whole_snapshot():
    d = DeploymentSpec.model_validate({"name": "v", "engine": "vllm", "image": "i", "model": "m", "nodes": ["a"],
                                       "served_name": "v"})
    assert ENGINES["vllm"].model_files(d) is None and ENGINES["sglang"].model_files(d) is None


@pytest.mark.parametrize("name, patterns", [
    ("Qwen3-30B-A3B-Q4_K_M.gguf", ["Qwen3-30B-A3B-Q4_K_M.gguf"]),
    # a split file: every part (llama-server opens the first and finds the others beside it)
    ("Qwen3-235B-Q8_0-00001-of-00006.gguf", ["Qwen3-235B-Q8_0-?????-of-00006.gguf"]),
    # fnmatch's special characters in a name match themselves only
    ("m[1]-Q4.gguf", ["m[[]1]-Q4.gguf"]),
])
def test_llamacpp_needs_its_named_file_alone(name, patterns):
    assert LLAMA.model_files(gguf(name)) == patterns


def test_a_later_part_of_a_split_file_is_refused_naming_the_first():
    with pytest.raises(ValueError, match=r"part 3 of a split GGUF file.*fix: --model big-00001-of-00004\.gguf"):
        gguf("big-00003-of-00004.gguf")


# --- the union ------------------------------------------------------------------------------------

def test_the_union_of_the_deployments_files_and_the_whole_snapshot_when_one_needs_it():
    spec = lab_with_hub_gguf({"name": "tiny-gguf-q8", "port": 8004, "served_name": "tiny-q8",
                              "extra_args": ["--model", "tiny-Q8_0.gguf"]})
    assert model_files(spec, "tiny-gguf") == ["tiny-Q8_0.gguf", "tiny-llama-f32.gguf"]
    assert model_files(spec, "tiny") is None                     # served by vLLM: whole
    vllm_too = lab_with_hub_gguf({"name": "tiny-gguf-vllm", "engine": "vllm", "image": "vllm-lab", "port": 8004,
                                  "served_name": "tiny-v", "extra_args": []})
    assert model_files(vllm_too, "tiny-gguf") is None
    nobody = spec.model_copy(update={"deployments": [d for d in spec.deployments if d.model != "tiny-gguf"]})
    assert model_files(nobody, "tiny-gguf") is None


def test_an_engine_image_that_may_lack_the_downloader_is_checked_unless_the_source_names_one():
    spec = lab_with_hub_gguf()
    assert downloader(spec, "tiny-gguf") == {"downloader_image": LLAMA_IMAGE, "downloader_python": None,
                                             "check_downloader": True}
    assert downloader(spec, "tiny")["check_downloader"] is False  # vLLM's images carry huggingface_hub
    named = lab_with_hub_gguf(downloader_image="python:3.12-slim")
    assert downloader(named, "tiny-gguf")["downloader_image"] == "python:3.12-slim"


# --- the rendered fetch ---------------------------------------------------------------------------

def test_the_stacks_fetch_downloads_only_the_file_with_the_patterns_as_argv():
    s = snapshot("lab", lab_with_hub_gguf(downloader_image="198.18.0.1:5000/lab/vllm-cpu:0.32.0"))
    script = script_of(s.by_name("tiny-gguf-fetch"), "create")
    assert ("local_dir=\"/dest\", allow_patterns=sys.argv[3:])' \\\n"
            f"  blackwell-lab/tiny-llama-gguf {COMMIT} tiny-llama-f32.gguf 2>&1 | progress") in script
    assert "--entrypoint python3 198.18.0.1:5000/lab/vllm-cpu:0.32.0 -c" in script
    assert "allow_patterns=tiny-llama-f32.gguf\n" in script and ".blackwell-allow-patterns" in script
    subprocess.run([require("bash"), "-n"], input=script, text=True, check=True)
    # the vLLM model's fetch is the whole snapshot, as before (the render goldens hold it byte for byte)
    assert "allow_patterns" not in script_of(s.by_name("tiny-fetch"), "create")


def test_patterns_reach_the_shell_quoted():
    script = render("scripts/fetch-model.sh.j2", kind="hub", repo="o/m", revision=COMMIT, image=None,
                    python="/opt/venv/bin/python", allow_patterns=["a b-?????-of-00002.gguf", "it's.gguf"],
                    with_token=False, endpoint=None, source_path="", model_name="m", final_dir="/c/m",
                    staging_dir="/c/.staging/m")
    assert f"o/m {COMMIT} \"$staging\" 'a b-?????-of-00002.gguf' 'it'\"'\"'s.gguf' 2>&1" in script
    subprocess.run([require("bash"), "-n"], input=script, text=True, check=True)


def test_an_image_without_the_downloader_stops_the_fetch_before_any_download(tmp_path):
    """A stand-in `docker` answers as Docker does for an image without python3; the script prints
    one FAILED block naming the image, the model and the fix, and never starts the download."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "docker-calls"
    docker = bin_dir / "docker"
    docker.write_text("#!/bin/bash\nprintf '%s\\n' \"$*\" >> " + str(calls) + "\n"
                      "[ \"$1\" = run ] || exit 0\n"
                      "echo 'docker: Error response from daemon: failed to create task for container: exec: "
                      "\"python3\": executable file not found in $PATH: unknown.' >&2\nexit 127\n")
    docker.chmod(0o755)
    s = snapshot("lab", lab_with_hub_gguf())
    script = script_of(s.by_name("tiny-gguf-fetch"), "create").replace(
        "/var/lib/blackwell-serving/models", str(tmp_path / "models")).replace(
        "/var/log/blackwell-serving/", str(tmp_path) + "/")
    done = subprocess.run([require("bash"), "-c", script], capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "BWS_DOING": "Download model tiny-gguf",
                               "BWS_NODE": "lab-1"})
    assert done.returncode == 1
    block = done.stdout[done.stdout.index("FAILED:"):]
    assert block.count("FAILED:") == 1
    assert (f"  said:   model tiny-gguf cannot be downloaded in image {LLAMA_IMAGE} (it needs python3 with "
            "huggingface_hub); fix: name an image that has them in the model's source.downloader_image, or "
            "download the files yourself and use source: {kind: local, path: DIR}") in block, block
    assert 'executable file not found' in block
    runs = [c for c in calls.read_text().splitlines() if c.startswith("run ")]
    assert len(runs) == 1 and "import huggingface_hub" in runs[0] and "snapshot_download" not in runs[0]
    assert "downloading" not in done.stderr
    assert not os.path.exists(tmp_path / "models" / f"blackwell-lab--tiny-llama-gguf--{COMMIT}")


def test_the_fit_of_a_local_split_file_weighs_all_its_parts(tmp_path):
    from components.config.schema import ModelSpec
    from tests.unit.test_llamacpp import write_gguf

    first = write_gguf(tmp_path / "big-00001-of-00002.gguf")
    (tmp_path / "big-00002-of-00002.gguf").write_bytes(b"\0" * 10_000)
    (tmp_path / "other-Q4.gguf").write_bytes(b"\0" * 50_000)      # another file: not counted
    model = ModelSpec.model_validate({"name": "m", "repo": "o/m", "revision": "v1", "fetch_node": "a", "nodes": ["a"],
                                      "source": {"kind": "local", "path": str(tmp_path)}})
    (config, weights), where = LLAMA.fit_inputs(gguf("big-00001-of-00002.gguf"), model)
    assert weights == first.stat().st_size + 10_000 and config["num_hidden_layers"] == 2
    assert where == f"{first} (GGUF)"
