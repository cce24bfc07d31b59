"""A GGUF model from the hub on the lab, on the real engine: the Hub stand-in (tests/lab/hub.py) on
this machine serves a GGUF repository with two quantization files and a README; a stack of its own
(beside the converged `lab` stack, which it leaves alone) with the llama.cpp deployment naming one
file runs the model's fetch alone (`up --target`: no engine is started). First with the llama.cpp
image as the downloader: it lacks huggingface_hub, and the fetch stops with one FAILED block naming
the image, the model and the fix before any file is asked for. Then with source.downloader_image
(the vLLM CPU image, which has it): only the named file is requested and lands in lab-1's cache,
which passes its manifest check. Destroyed at the end (the cache removed). Bounded: each pulumi
run by its timeout."""

from __future__ import annotations

import shutil

import pytest
import yaml

from components import names
from components.config.schema import ModelSpec
from components.resources.image import image_tag
from tests.lab import topology as lab
from tests.lab.helpers import LAB_CONFIG, SPEC, Stack, api_key, deployment, image_of, require_lab, sh
from tests.lab.hub import HubStandIn

pytestmark = pytest.mark.lab
LAB_STATE = "converged"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE1, NODE2 = lab.nodes(2)
NAME = "lab-gguf-hub"
REPO_ID = "blackwell-lab/tiny-llama-gguf-hub"
COMMIT = "9916f00d9916f00d9916f00d9916f00d9916f00d"
SERVED_FILE, OTHER_FILE = "tiny-llama-f32.gguf", "tiny-llama-q8_0.gguf"
# The lab stack's llama.cpp image (what the fetch runs in unless told), the base of its vLLM image
# (which has huggingface_hub), and where the model's cache goes (the default cache_dir).
LLAMA_IMAGE = image_tag(image_of(next(d for d in SPEC.deployments if d.engine == "llamacpp")))
VLLM_BASE = image_of(deployment("tiny")).base
CACHE = names.model_cache_dirs(ModelSpec.model_fields["cache_dir"].default, REPO_ID, COMMIT)[0]
PROJECT = "blackwell-serving"


def fetch_only_urns() -> list[str]:
    """The fetch step and the components above it: `up --target` runs nothing else."""
    root = f"urn:pulumi:{NAME}::{PROJECT}::"
    serving, cache = "blackwell:stack:ServingStack", "blackwell:model:ModelCache"
    return [f"{root}pulumi:pulumi:Stack::{PROJECT}-{NAME}", f"{root}{serving}::{NAME}",
            f"{root}{serving}${cache}::tiny-gguf", f"{root}{serving}${cache}$command:remote:Command::tiny-gguf-fetch"]


def node_requests(hub: HubStandIn) -> list[str]:
    """What the node's download asked the Hub for. Left out: config.json, which the plan's fit
    check asks for on this machine (a GGUF repository has none: the fit goes unchecked, 404)."""
    return [p for _, p, _ in hub.requests if REPO_ID in p and not p.endswith("/config.json")]


def gguf_from_the_hub(endpoint: str, downloader_image: str | None):
    def change(c: dict) -> None:
        lab_stack = yaml.safe_load(LAB_CONFIG.read_text())["config"]
        served = next(d for d in lab_stack["blackwell-serving:deployments"] if d["engine"] == "llamacpp")
        source = {"kind": "hub", "endpoint": endpoint}
        if downloader_image:
            source["downloader_image"] = downloader_image
        c["blackwell-serving:nodes"] = c["blackwell-serving:nodes"][:1]
        c["blackwell-serving:images"] = [i for i in lab_stack["blackwell-serving:images"]
                                         if i["name"] == served["image"]]
        c["blackwell-serving:models"] = [{"name": "tiny-gguf", "repo": REPO_ID, "revision": COMMIT, "source": source,
                                          "fetch_node": "lab-1", "nodes": ["lab-1"]}]
        c["blackwell-serving:deployments"] = [{**served, "name": "tiny-gguf-hub", "port": 8005}]
        for key in ("fabric", "retire", "keep", "ray", "gateway"):
            c.pop(f"blackwell-serving:{key}", None)
    return change


@pytest.fixture(scope="module")
def gguf_repository(tmp_path_factory):
    """Two quantizations of the tiny model (the lab's GGUF file, and the same bytes under another
    name) and a README."""
    require_lab(NODE1)
    api_key()
    repo = tmp_path_factory.mktemp("gguf-repo")
    shutil.copy(lab.STATE_DIR / "tiny-gguf" / SERVED_FILE, repo / SERVED_FILE)
    (repo / OTHER_FILE).write_bytes((repo / SERVED_FILE).read_bytes() + b"q8")
    (repo / "README.md").write_text("# tiny llama, GGUF\n")
    return repo


def test_only_the_named_gguf_file_is_downloaded_into_the_cache(gguf_repository, tmp_path):
    with HubStandIn(REPO_ID, COMMIT, gguf_repository, host=lab.ENV["LAB_MGMT_GATEWAY"]) as hub:
        stack = Stack(tmp_path, NAME, gguf_from_the_hub(hub.url, None))
        targets = [arg for urn in fetch_only_urns() for arg in ("--target", urn)]
        try:
            refused = stack.run("up", "--yes", "--skip-preview", *targets, timeout=600)
            out = refused.stdout + refused.stderr
            assert refused.returncode != 0, out[-3000:]
            # the script prints one block (the engine may quote the step's output in its summary too)
            assert "FAILED: Download model tiny-gguf" in out, out[-3000:]
            assert (f"said:   model tiny-gguf cannot be downloaded in image {LLAMA_IMAGE} (it needs python3 with "
                    "huggingface_hub); fix: name an image that has them in the model's source.downloader_image") in out
            assert not node_requests(hub), "the refused fetch asked the Hub for files"
            print(out[out.index("FAILED: Download model tiny-gguf"):][:900])

            stack.change(gguf_from_the_hub(hub.url, VLLM_BASE))
            up = stack.run("up", "--yes", "--skip-preview", *targets, timeout=600)
            assert up.returncode == 0, up.stdout[-4000:] + up.stderr[-2000:]
            files = {p.rsplit("/", 1)[1] for p in node_requests(hub) if "/resolve/" in p}
            assert files == {SERVED_FILE}, files
            listing = sh(NODE1, f"ls -A {CACHE}").split()
            assert [f for f in listing if not f.startswith(".blackwell-")] == [SERVED_FILE], listing
            assert sh(NODE1, f"cd {CACHE} && sha256sum -c --quiet .blackwell-manifest.sha256 && echo ok") == "ok"
            print(f"hub GETs: {sorted(files)}; cache on lab-1: {listing}")
        finally:
            stack.destroy()
    assert sh(NODE1, f"test -e {CACHE} && echo left || echo gone") == "gone"
