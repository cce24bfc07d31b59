"""The safe swap on the lab, on the real engine (components/steps/rollback.py): an `up` whose engine
fails after glm was stopped gives glm back in the same run; a swap of our own deployment to a
model whose engine fails puts the previous one back, serving; a swap that works removes the
previous model's cache only once the new one answered. Each runs a one-node variant of the lab
stack (everything on lab-1: no image copy) as its own stack in a copy of the project."""

from __future__ import annotations

import json
import shutil

import pytest

from components import names
from tests.lab import topology as lab
from tests.lab.helpers import LAB_MODEL_DIR, SPEC, Stack, api_key, base_image_only, completion, nodes_as_found, one_node, require_lab, sh

pytestmark = pytest.mark.lab
LAB_STATE = "clean"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE1, NODE2 = lab.nodes(2)
PORT = 8000
SERVED = "tiny-llama"
# The engine of the stacks here: the lab stack's first deployment (tests/lab/helpers.py lab_config_one_engine).
ENGINE = names.engine_unit(SPEC.deployments[0].name)


def model_copy(tmp_path, name: str, **config_changes):
    model = tmp_path / name
    shutil.copytree(lab.STATE_DIR / "tiny-model", model)
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, **config_changes}, indent=2, sort_keys=True))
    return model


def swap_model(c: dict, name: str, revision: str, path) -> None:
    """Serve another model (a new entry of models:, as an operator writes a swap)."""
    c["blackwell-serving:models"][0].update(name=name, revision=revision, source={"kind": "local", "path": str(path)})
    c["blackwell-serving:deployments"][0]["model"] = name


def served_path() -> str:
    key = api_key()
    models = json.loads(sh(NODE1, f"curl -fsS --max-time 30 -H 'Authorization: Bearer {key}' "
                                  f"http://127.0.0.1:{PORT}/v1/models"))
    return models["data"][0]["root"]


@pytest.fixture(scope="module")
def lab_clean():
    require_lab(NODE1, NODE2)
    api_key()
    assert nodes_as_found()["our_units"] == {NODE1.name: "0", NODE2.name: "0"}, "the lab has units of ours left"


MISSING_TEMPLATE = "/nonexistent/bws-rollback-test.jinja"


def test_an_engine_that_cannot_start_gives_glm_back_in_the_same_up(lab_clean, tmp_path):
    def fails_at_start(c):
        # A flag the engine's parser takes (an unknown one now stops `up` at the engine probe, before
        # anything is stopped: test_lab_preflight.py) whose value fails only when the API server
        # starts: a chat template that is not there.
        one_node(c)
        base_image_only(c)
        c["blackwell-serving:deployments"][0]["extra_args"] += ["--chat-template", MISSING_TEMPLATE]

    stack = Stack(tmp_path, "lab-rollback", fails_at_start)
    before = nodes_as_found()
    assert before["glm"] == ("active", "enabled")
    try:
        up = stack.run("up", "--yes", "--skip-preview")
        out = up.stdout + up.stderr
        assert up.returncode != 0, out[-4000:]
        assert "The run was rolled back" in out, out[-6000:]
        assert "Last lines of our units' journal on lab-1" in out and MISSING_TEMPLATE in out, out[-6000:]
        assert "Start glm.service again on lab-1 (restore)" in out, out[-6000:]
        # As found: glm serves again, the embeddings server was never touched, nothing of ours runs.
        assert nodes_as_found() == before
        assert sh(NODE1, f"curl -fsS --max-time 5 http://127.0.0.1:{lab.GLM_PORT}/ >/dev/null && echo up") == "up"
        # The todo list shows what the failed run left to do: glm to retire, the engine to start.
        preview = stack.run("preview", "--json")
        steps = [s for s in json.loads(preview.stdout)["steps"] if s["op"] != "same"]
        names = {s["urn"].split("::")[-1] for s in steps}
        assert "lab-1-glm-retire" in names, names
    finally:
        stack.destroy()
    assert nodes_as_found() == before


def test_a_failed_swap_brings_the_previous_model_back_and_a_good_one_replaces_it(lab_clean, tmp_path):
    broken = model_copy(tmp_path, "tiny-broken", max_position_embeddings=128)  # < max_model_len: vLLM refuses
    second = model_copy(tmp_path, "tiny-second")
    stack = Stack(tmp_path, "lab-swap", lambda c: (one_node(c), base_image_only(c)))
    first_cache = LAB_MODEL_DIR
    try:
        up = stack.run("up", "--yes", "--skip-preview")
        assert up.returncode == 0, (up.stdout + up.stderr)[-4000:]
        assert completion(SERVED, PORT)["choices"]
        pid_before = sh(NODE1, f"systemctl show -p MainPID --value {ENGINE}")

        stack.change(lambda c: swap_model(c, "tiny-broken", "lab-broken", broken))
        up = stack.run("up", "--yes", "--skip-preview")
        out = up.stdout + up.stderr
        assert up.returncode != 0, out[-4000:]
        assert "The run was rolled back" in out and f"Put the previous {ENGINE} back on lab-1" in out, out[-6000:]
        assert "Again, for the previous deployment: Health gate: a real chat completion from tiny" in out
        assert "NOT put back" not in out, out[-6000:]
        # The previous deployment serves again (a new process of the previous unit), its cache intact.
        assert served_path().endswith("lab-v1"), served_path()
        assert completion(SERVED, PORT)["choices"]
        assert sh(NODE1, f"systemctl show -p MainPID --value {ENGINE}") != pid_before
        assert sh(NODE1, f"test -d {first_cache} && echo kept") == "kept"
        # The todo list shows the failed swap: the unit to rewrite with the new model.
        preview = stack.run("preview", "--json")
        names = {s["urn"].split("::")[-1] for s in json.loads(preview.stdout)["steps"] if s["op"] != "same"}
        assert "tiny-lab-1-install" in names, names

        stack.change(lambda c: swap_model(c, "tiny-second", "lab-v2", second))
        up = stack.run("up", "--yes", "--skip-preview")
        assert up.returncode == 0, (up.stdout + up.stderr)[-4000:]
        assert served_path().endswith("lab-v2"), served_path()
        assert completion(SERVED, PORT)["choices"]
        # Only now, after the new model answered, is the previous cache gone.
        assert sh(NODE1, f"test -e {first_cache} && echo there || echo gone") == "gone"
    finally:
        stack.destroy()
