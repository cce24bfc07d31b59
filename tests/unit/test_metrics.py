"""The stack's Prometheus scrape config (components/operator/metrics.py): one file_sd target group per
deployment (its head's API port, labelled), written atomically and only when it changed; and
SGLang asked for its /metrics (--enable-metrics) unless extra_args already does."""

from __future__ import annotations

import json

from components.engines import ENGINES
from components.operator.metrics import file_sd, file_sd_path, write_file_sd
from tests.unit.test_graph import snap


def test_one_labelled_target_per_deployment_on_its_head():
    spec = snap("lab").spec
    assert file_sd("lab", spec) == [{"targets": [f"{spec.nodes[0].host}:8000"],
                                     "labels": {"stack": "lab", "deployment": "tiny", "engine": "vllm",
                                                "node": "lab-1", "served_name": "tiny-llama"}},
                                    # the lab's second model, behind the gateway with the first
                                    {"targets": [f"{spec.nodes[1].host}:8002"],
                                     "labels": {"stack": "lab", "deployment": "tiny-b", "engine": "vllm",
                                                "node": "lab-2", "served_name": "tiny-llama-b"}},
                                    # the third, llama.cpp's server (its /metrics wants the API key)
                                    {"targets": [f"{spec.nodes[0].host}:8003"],
                                     "labels": {"stack": "lab", "deployment": "tiny-gguf", "engine": "llamacpp",
                                                "node": "lab-1", "served_name": "tiny-llama-gguf"}}]


def test_every_shipped_stack_names_its_engines():
    for stack in ("spark-duo", "spark-duo-sglang", "rtxpro-quad", "rtxpro-quad-docker"):
        spec = snap(stack).spec
        groups = file_sd(stack, spec)
        assert [g["labels"]["deployment"] for g in groups] == [d.name for d in spec.deployments]
        for g, d in zip(groups, spec.deployments):
            head = next(n for n in spec.nodes if n.name == d.nodes[0])
            assert g["targets"] == [f"{head.host}:{d.port}"]
            assert (g["labels"]["engine"], g["labels"]["node"]) == (d.engine, head.name)


def test_a_bound_address_is_the_target():
    spec = snap("lab").spec
    d = spec.deployments[0].model_copy(update={"bind": "198.19.0.11"})
    groups = file_sd("lab", spec.model_copy(update={"deployments": [d]}))
    assert groups[0]["targets"] == ["198.19.0.11:8000"]


def test_written_once_atomically_then_left_alone(tmp_path):
    spec = snap("lab").spec
    path, written = write_file_sd("lab", spec, tmp_path / "metrics")
    assert written and path == file_sd_path("lab", tmp_path / "metrics")
    assert json.loads(path.read_text()) == file_sd("lab", spec)
    mtime = path.stat().st_mtime_ns
    assert write_file_sd("lab", spec, tmp_path / "metrics") == (path, False)
    assert path.stat().st_mtime_ns == mtime
    assert [p.name for p in path.parent.iterdir()] == ["lab.json"]   # no temporary file left
    path.write_text("[]\n")
    assert write_file_sd("lab", spec, tmp_path / "metrics")[1]


def test_sglang_serves_metrics_vllm_unasked():
    d = snap("spark-duo-sglang").spec.deployments[0]
    assert ENGINES["sglang"].argv(d, "/m").count("--enable-metrics") == 1
    given = d.model_copy(update={"extra_args": ["--enable-metrics"]})
    assert ENGINES["sglang"].argv(given, "/m").count("--enable-metrics") == 1
    assert "--enable-metrics" not in ENGINES["vllm"].argv(snap("lab").spec.deployments[0], "/m")
