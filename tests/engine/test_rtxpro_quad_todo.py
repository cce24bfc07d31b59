"""rtxpro-quad on the real engine, offline: its todo list reads like seed 003's four items —
download the model, build SGLang main from source with CUDA 13, update the systemd service, test
and verify serving — plus the checks (the engine probe, retiring the Kimi service)."""

from __future__ import annotations

import json

from tests.engine.conftest import pulumi
from tests.engine.test_todo_cli import OFFLINE, todo


def test_the_todo_list_is_seed_003s_plus_the_checks(project):
    pulumi(project, "stack", "init", "rtxpro-quad", env=OFFLINE)
    done = todo(project, "--stack", "rtxpro-quad", "--format", "json-full", env=OFFLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    items = json.loads(done.stdout)
    contents = [i["content"] for i in items]
    seed = ["Download model qwen35-397b (nvidia/Qwen3.5-397B-A17B-NVFP4) on llm-server",
            "Build venv sglang-main on llm-server from source (sglang at the commit to set), "
            "--no-deps over the node's torch",
            "Install and start bws-qwen35-397b.service on llm-server",
            "Health gate: a real chat completion from qwen35-397b"]
    checks = ["Preflight: the engine venv of qwen35-397b knows its model and takes its flags (probe on llm-server)",
              "Stop and disable sglang-kimi.service on llm-server"]
    for item in seed + checks:
        assert item in contents, f"{item!r} not in {contents}"
    order = [contents.index(c) for c in seed]
    assert order[2] < order[3] and max(order[:2]) < order[2], contents
    assert not any("image" in c.lower() and "Build" in c for c in contents if "venv" not in c)
    assert {i["node"] for i in items} == {"llm-server"}
