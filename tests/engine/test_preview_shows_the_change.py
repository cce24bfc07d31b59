"""The preview shows the change itself (design principle 7), on the real engine, offline: from a
converged spark-duo (a state made by tests/engine/baseline.py, no node contacted), one engine
flag and one Environment= value change (the unit's item names exactly them), then the API key
too. `pulumi preview --diff` and the todo item
of the engine's unit name the flag and the value; the secret travels on its own step, and no
secret value (old or new) appears anywhere in the preview's JSON, its diff or the todo list."""

from __future__ import annotations

import json
import re

from tests.engine.baseline import converge
from tests.engine.conftest import pulumi
from tests.engine.test_todo_cli import todo

STACK = "spark-duo"
SECRETS = {"QWEN_API_KEY": "sentinel-api-key-1", "HF_TOKEN": "sentinel-hf-token-9",
           "GATEWAY_API_KEY": "sentinel-gateway-key-7"}
NEW_KEY = "sentinel-api-key-2"
OFFLINE = {"BLACKWELL_SERVING_OFFLINE": "1"}
FLAG = "--max-model-len 131072 → 65536"
ENV_VALUE = "env VLLM_ATTENTION_BACKEND: FLASHINFER → TRITON_ATTN"


def change_the_stack(project) -> None:
    path = project / "stacks" / f"Pulumi.{STACK}.yaml"
    text = path.read_text()
    for old, new in (("max_model_len: 131072", "max_model_len: 65536"),
                     ("VLLM_ATTENTION_BACKEND: FLASHINFER", "VLLM_ATTENTION_BACKEND: TRITON_ATTN")):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text)


def test_the_preview_and_the_todo_name_the_changed_flag_and_env_value_and_no_secret(project):
    before = {**OFFLINE, **SECRETS}
    assert pulumi(project, "stack", "init", STACK, env=before).returncode == 0
    converge(project, STACK, before)
    change_the_stack(project)
    # The flag and the value alone: the unit's item names them and, since the value reaches the
    # Ray units too (which restart first, so the engine restarts after them), that it follows them.
    listed = todo(project, "--stack", STACK, "--format", "json-full", env=before)
    assert listed.returncode == 0, listed.stderr[-3000:]
    reasons = {i["id"]: i["reason"] for i in json.loads(listed.stdout)}
    assert reasons["qwen35-spark-1a32-install"] == f"update: {FLAG}, {ENV_VALUE}, takes an earlier step's output"
    assert reasons["qwen35-ray-head-spark-1a32-install"].startswith("update:"), reasons
    assert "qwen35-spark-1a32-env" not in reasons
    # And with a new API key too.
    after = {**before, "QWEN_API_KEY": NEW_KEY}

    diff = pulumi(project, "preview", "--stack", STACK, "--diff", env=after)
    assert diff.returncode == 0, diff.stderr[-3000:]
    engine_unit = diff.stdout.split("::qwen35-spark-1a32-install]", 1)[1].split("command:remote:Command", 1)[0]
    # The unit's text, line by line, with the flag it belongs to as context.
    flag_lines = r'^\s+"--max-model-len" \\\n\s+-\s+"131072" \\\n\s+\+\s+"65536" \\$'
    assert re.search(flag_lines, engine_unit, re.M), engine_unit
    assert re.search(r'^\s+- Environment="VLLM_ATTENTION_BACKEND=FLASHINFER"$', engine_unit, re.M), engine_unit
    assert re.search(r'^\s+\+ Environment="VLLM_ATTENTION_BACKEND=TRITON_ATTN"$', engine_unit, re.M), engine_unit
    # The key's file is its own step, whose stdin alone is hidden.
    env_step = diff.stdout.split("::qwen35-spark-1a32-env]", 1)[1].split("command:remote:Command", 1)[0]
    assert "stdin: [secret] => [secret]" in env_step

    listed = todo(project, "--stack", STACK, "--format", "json-full", env=after)
    assert listed.returncode == 0, listed.stderr[-3000:]
    reasons = {i["id"]: i["reason"] for i in json.loads(listed.stdout)}
    unit = reasons["qwen35-spark-1a32-install"]
    assert unit.startswith(f"update: {FLAG}, {ENV_VALUE}")
    # The new key restarts the unit: its install step takes the env step's new generation.
    assert unit.endswith("takes an earlier step's output")
    assert reasons["qwen35-spark-1a32-env"] == "update: secret or script changed"
    # The Ray units carry the deployment's environment too; their flags did not change.
    assert reasons["qwen35-ray-head-spark-1a32-install"] == f"update: {ENV_VALUE}"
    text = todo(project, "--stack", STACK, env=after)
    assert f"(update: {FLAG}, {ENV_VALUE}" in text.stdout

    whole = pulumi(project, "preview", "--stack", STACK, "--json", env=after)
    assert whole.returncode == 0, whole.stderr[-3000:]
    assert json.loads(whole.stdout)["steps"]
    plans = "".join(p.read_text() for p in project.parent.glob("baseline-plan-*.json"))
    for value in (*SECRETS.values(), NEW_KEY):
        for name, output in (("preview --json", whole.stdout), ("preview --diff", diff.stdout + diff.stderr),
                             ("todo", listed.stdout + text.stdout + listed.stderr), ("saved plans", plans)):
            assert value not in output, f"{value} in the {name} output"

