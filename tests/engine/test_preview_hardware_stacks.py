"""Previews of the real-hardware stacks on the real engine, offline: they must complete here
although spark-duo's and rtxpro-quad's nodes cannot be reached, and list the pending work."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.steps.remote import read_script
from tests.engine.conftest import copy_project, preview_json, pulumi

OFFLINE = {"BLACKWELL_SERVING_OFFLINE": "1"}


def creates(doc: dict) -> dict[str, dict]:
    return {step["urn"].split("::")[-1]: step for step in doc["steps"] if step["op"] == "create"}


def script(step: dict) -> str:
    """What a step runs on its node: its command line reads it from its stdin. A step whose
    command line names a value not known before `up` (the ID of an image still to be built) has
    an unknown command line in a preview: then its whole stdin (its scripts and its data)."""
    inputs = step["newState"]["inputs"]
    try:
        return read_script(inputs["create"], inputs["stdin"])
    except ValueError:
        return inputs["stdin"]


def test_spark_duo_preview_lists_the_deployment(project):
    steps = creates(preview_json(project, "spark-duo", OFFLINE))
    assert {s["newState"]["type"] for s in steps.values() if s["newState"]["custom"]} == {"command:remote:Command"}
    script_of = lambda name: script(steps[name])
    assert "systemctl disable --now vllm-cluster.service" in script_of("spark-1a32-vllm-cluster-retire")
    assert "if ! unit_running vllm-embeddings.service; then" in script_of("spark-5be3-vllm-embeddings-check")
    # Seed 002: the image that served, pulled as it is (no transformers layer).
    assert "docker pull hellohal2064/vllm-qwen3.5-gb10:latest" in script_of("vllm-qwen35-build")
    # Steps that carry a secret on stdin (the HF token, the API key's EnvironmentFile) show it
    # only as a secret, scripts included; their content is pinned by the unit and render tests.
    for secret_carrier in ("qwen35-122b-fetch", "qwen35-spark-1a32-env"):
        assert steps[secret_carrier]["newState"]["inputs"]["stdin"] == "[secret]"
    # The engine's unit travels apart from its key: its text is plain in the preview.
    assert '"--max-model-len" \\\n  "131072"' in script_of("qwen35-spark-1a32-install")
    assert "docker save" in script_of("vllm-qwen35-sync-spark-5be3")
    assert "192.168.200.13" in script_of("vllm-qwen35-sync-spark-5be3")
    assert "rsync" in script_of("qwen35-122b-to-spark-5be3")
    assert '"ray" \\\n  "start" \\\n  "--head"' in script_of("qwen35-ray-head-spark-1a32-install")
    assert "--address=192.168.200.12:6379" in script_of("qwen35-ray-worker-spark-5be3-install")
    assert "/v1/chat/completions" in script_of("qwen35-health")
    # The connection is a secret (it may carry a key); the command line names the node.
    assert steps["vllm-qwen35-build"]["newState"]["inputs"]["connection"] == "[secret]"
    assert "BWS_STEP='vllm-qwen35-build on spark-1a32'" in steps["vllm-qwen35-build"]["newState"]["inputs"]["create"]
    assert "on spark-5be3'" in steps["spark-5be3-vllm-embeddings-check"]["newState"]["inputs"]["create"]


def test_spark_duo_sglang_preview_lists_seed_002s_first_attempt(project):
    steps = creates(preview_json(project, "spark-duo-sglang", OFFLINE))
    script_of = lambda name: script(steps[name])
    assert "FROM scitrera/dgx-spark-sglang:0.5.10rc0" in script_of("sglang-spark-build")
    assert "transformers>=5.0" in script_of("sglang-spark-build")
    # The NCCL all-reduce across both Sparks, bounded, with the fix for a hang; retiring waits for it.
    check = steps["qwen35-sglang-bandwidth-check"]
    assert "timeout -k 10 600" in script(check) and "NCCL_IB_GID_INDEX=3" in script(check)
    assert "fabric.gid_index" in script(check)
    assert "systemctl disable --now vllm-cluster.service" in script_of("spark-1a32-vllm-cluster-retire")
    assert check["urn"] in steps["spark-1a32-vllm-cluster-retire"]["newState"]["dependencies"]
    assert {"qwen35-sglang-spark-1a32-install", "qwen35-sglang-spark-5be3-install"} <= set(steps)


def test_spark_duo_native_preview_lists_both_ranks_and_no_ray(project):
    """vLLM's own two-node launch on the Sparks: a unit per rank (the secondary's --headless),
    no Ray units, and the secondary's rank watch."""
    steps = creates(preview_json(project, "spark-duo-native", OFFLINE))
    assert {"qwen35-spark-1a32-install", "qwen35-spark-5be3-install", "qwen35-rank1-watch-timer"} <= set(steps)
    assert not [name for name in steps if "-ray-" in name]
    # The secondary's rank first: the head's unit waits for it.
    assert steps["qwen35-spark-5be3-install"]["urn"] in steps["qwen35-spark-1a32-install"]["newState"]["dependencies"]
    assert "192.168.200.12" in script(steps["qwen35-rank1-watch-timer"])
    assert "/v1/chat/completions" in script(steps["qwen35-health"])


@pytest.mark.parametrize("stack", ["spark-duo", "spark-duo-native", "spark-duo-sglang", "rtxpro-quad", "rtxpro-quad-docker"])
def test_the_engine_gives_the_pinned_urns(project, stack):
    """The golden URN lists (tests/unit/test_state_contract.py) are what the real engine plans."""
    golden = Path(__file__).resolve().parents[1] / "unit" / "golden" / f"urns-{stack}.txt"
    planned = {s["urn"] for s in preview_json(project, stack, OFFLINE)["steps"]
               if "::pulumi:pulumi:Stack::" not in s["urn"] and "::pulumi:providers:" not in s["urn"]}
    assert planned == set(golden.read_text().splitlines())


@pytest.mark.parametrize("stack", ["rtxpro-quad", "rtxpro-quad-docker"])
def test_rtxpro_quad_preview_lists_the_deployment(project, stack):
    steps = creates(preview_json(project, stack, OFFLINE))
    assert "systemctl disable --now sglang-kimi.service" in script(steps["llm-server-sglang-kimi-retire"])
    assert steps["qwen35-397b-llm-server-env"]["newState"]["inputs"]["stdin"] == "[secret]"
    assert "\"--context-length\"" in script(steps["qwen35-397b-llm-server-install"])
    assert steps["qwen35-397b-fetch"]["newState"]["inputs"]["stdin"] == "[secret]"
    if stack == "rtxpro-quad":
        # Seed 003: SGLang main built from source into a venv, no image; the commit is the
        # operator's to set, and the offline preview plans the build without it.
        assert "sglang-cu13-build" not in steps
        build = script(steps["sglang-main-venv-llm-server"])
        assert "https://github.com/sgl-project/sglang.git" in build and "--no-deps" in build
        assert "commit=not_set" in build


def test_offline_mode_refuses_up(project):
    pulumi(project, "stack", "init", "rtxpro-quad", env=OFFLINE)
    run = pulumi(project, "up", "--stack", "rtxpro-quad", "--yes", "--skip-preview", env=OFFLINE)
    assert run.returncode != 0
    assert "offline mode is for previews only" in run.stdout + run.stderr


def test_bad_config_is_one_clear_message(project):
    stack_file = project / "stacks" / "Pulumi.rtxpro-quad.yaml"
    stack_file.write_text(stack_file.read_text().replace("tensor_parallel: 4", "tensor_parallel: 3"))
    pulumi(project, "stack", "init", "rtxpro-quad", env=OFFLINE)
    run = pulumi(project, "preview", "--stack", "rtxpro-quad", env=OFFLINE)
    out = run.stdout + run.stderr
    assert run.returncode != 0
    assert "stacks/Pulumi.rtxpro-quad.yaml" in out
    assert "blackwell-serving:deployments[0].tensor_parallel" in out
    assert "Traceback" not in out


def test_an_operators_own_stack_init_does_not_break_the_tests(tmp_path):
    """`pulumi stack init spark-duo` in a checkout writes the operator's salt into the committed
    stack file; the tests work on copies that forget it, so their own passphrase still works."""
    (tmp_path / "operator").mkdir()
    (tmp_path / "tests").mkdir()
    operator = copy_project(tmp_path / "operator")
    init = pulumi(operator, "stack", "init", "spark-duo", env={"PULUMI_CONFIG_PASSPHRASE": "the-operators-own"})
    assert init.returncode == 0, init.stderr
    assert "encryptionsalt:" in (operator / "stacks" / "Pulumi.spark-duo.yaml").read_text()
    copy = copy_project(tmp_path / "tests", source=operator)
    assert preview_json(copy, "spark-duo", OFFLINE)["steps"]
