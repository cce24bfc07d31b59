"""The todo command on the real engine, against stacks that need no node."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.engine.conftest import pulumi

OFFLINE = {"BLACKWELL_SERVING_OFFLINE": "1"}


def todo(project, *args, env=None):
    full = {**os.environ, "PULUMI_BACKEND_URL": f"file://{project.parent / 'backend'}",
            "PULUMI_CONFIG_PASSPHRASE": "engine-tests", "PYTHONPATH": str(project), **(env or {})}
    full.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    return subprocess.run([sys.executable, "-m", "components.todo", "--work-dir", str(project), *args],
                          cwd=project, env=full, capture_output=True, text=True, timeout=300)


def test_a_stack_not_yet_created_gets_the_command_that_creates_it(project):
    done = todo(project, "--stack", "spark-duo", env=OFFLINE)
    assert done.returncode == 1
    assert "pulumi stack init spark-duo" in done.stderr
    assert "Traceback" not in done.stderr


def test_offline_todo_list_of_a_hardware_stack_reads_like_its_seed(project):
    pulumi(project, "stack", "init", "spark-duo", env=OFFLINE)
    done = todo(project, "--stack", "spark-duo", "--format", "json-full", env=OFFLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    items = json.loads(done.stdout)
    contents = [i["content"] for i in items]
    assert "Download model qwen35-122b (Qwen/Qwen3.5-122B-A10B-FP8) on spark-1a32" in contents
    assert "Stop and disable vllm-cluster.service on spark-1a32" in contents
    assert {i["node"] for i in items} == {"spark-1a32", "spark-5be3"}
    # Retiring waits for every preflight check: nothing is stopped before they pass.
    by_id = {i["id"]: i for i in items}

    def waits_for(item_id: str) -> set[str]:
        found, todo = set(), list(by_id[item_id]["depends_on"])
        while todo:
            d = todo.pop()
            if d not in found:
                found.add(d)
                todo += by_id[d]["depends_on"]
        return found

    retire = next(i["id"] for i in items if i["content"].startswith("Stop and disable vllm-cluster"))
    preflight = {i["id"] for i in items if i["phase"] == "preflight"}
    assert preflight and preflight <= waits_for(retire)
