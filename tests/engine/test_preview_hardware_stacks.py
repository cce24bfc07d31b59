"""Previews of the real-hardware stacks on the real engine, offline: they must complete here
although spark-duo's and rtxpro-quad's nodes cannot be reached, and list the pending work."""

from __future__ import annotations

from tests.engine.conftest import preview_json, pulumi

OFFLINE = {"BLACKWELL_SERVING_OFFLINE": "1"}


def creates(doc: dict) -> dict[str, dict]:
    return {step["urn"].split("::")[-1]: step for step in doc["steps"] if step["op"] == "create"}


def test_spark_duo_preview_lists_the_deployment(project):
    steps = creates(preview_json(project, "spark-duo", OFFLINE))
    script = lambda name: steps[name]["newState"]["inputs"]["create"]
    assert "systemctl disable --now vllm-cluster.service" in script("spark-1a32-vllm-cluster-retire")
    assert "systemctl is-active --quiet vllm-embeddings.service" in script("spark-5be3-vllm-embeddings-check")
    assert "transformers>=5.2" in script("vllm-qwen35-build")
    assert "Qwen/Qwen3.5-122B-A10B-FP8" in script("qwen35-122b-fetch")
    assert "docker save" in script("vllm-qwen35-sync-spark-5be3")
    assert "192.168.200.13" in script("vllm-qwen35-sync-spark-5be3")
    assert "rsync" in script("qwen35-122b-to-spark-5be3")
    assert '"ray" \\\n  "start" \\\n  "--head"' in script("qwen35-ray-head-spark-1a32-install")
    assert "--address=192.168.200.12:6379" in script("qwen35-ray-worker-spark-5be3-install")
    engine = script("qwen35-spark-1a32-install")
    assert '"--tensor-parallel-size" \\\n  "2" \\\n' in engine
    assert '"--distributed-executor-backend" \\\n  "ray"' in engine
    assert "/v1/chat/completions" in script("qwen35-health")
    connections = {n: s["newState"]["inputs"]["connection"]["host"] for n, s in steps.items()
                   if s["newState"]["type"] == "pulumi-python:dynamic/remote:Command"}
    assert connections["vllm-qwen35-build"] == "spark-1a32"
    assert connections["spark-5be3-vllm-embeddings-check"] == "spark-5be3"


def test_rtxpro_quad_preview_lists_the_deployment(project):
    steps = creates(preview_json(project, "rtxpro-quad", OFFLINE))
    assert "systemctl disable --now sglang-kimi.service" in steps["llm-server-sglang-kimi-retire"]["newState"]["inputs"]["create"]
    engine = steps["qwen35-397b-llm-server-install"]["newState"]["inputs"]["create"]
    for flag in ("modelopt_fp4", "flashinfer_cutlass", "--fp4-gemm-backend", "--enable-hierarchical-cache"):
        assert flag in engine


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
