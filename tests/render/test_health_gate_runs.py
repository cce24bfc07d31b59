"""The health gate (templates/scripts/health-gate.sh.j2) run for real with bash, its commands
stand-ins on PATH: curl never lists the model, systemctl shows the states a test gives one per
call (the last one repeats) and NRestarts rising by one at each call, sleep returns at once. It checks the gate's decision: systemd's
restarts are waited out, a unit systemd gave up on fails the gate at once naming its state, and
a crash loop (more restarts since the gate began than the stack allows) fails it naming the count, and
the timeout names itself. What it cannot check here: the real systemd (the lab tests do)."""

from __future__ import annotations

import os
import subprocess

import pytest

from components.steps.render import render
from tests.tools import require

UNIT = "bws-x.service"
SYSTEMCTL = r"""#!/usr/bin/env bash
# A stand-in for systemctl: `show` prints the next of the states in $FAKE/states.
if [ "$1" = show ]; then
  n=$(( $(cat "$FAKE/n" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$FAKE/n"
  total=$(wc -l < "$FAKE/states")
  line=$(sed -n "$(( n < total ? n : total ))p" "$FAKE/states")
  read -r active sub result <<< "$line"
  printf 'ActiveState=%s\nSubState=%s\nResult=%s\nNRestarts=%s\n' "$active" "$sub" "$result" "$n"
fi
exit 0
"""
# curl lists the model once $FAKE/listed exists.
CURL = '#!/usr/bin/env bash\n[ -e "$FAKE/listed" ] || exit 7\n' \
       'case "$*" in *models*) echo \'{"data":[{"id":"m"}]}\' ;; *) echo \'{"choices":[]}\' ;; esac\n'
# sleep: the gate's pause; after $FAKE/list_after pauses the model is listed.
SLEEP = '#!/usr/bin/env bash\nn=$(( $(cat "$FAKE/slept" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$FAKE/slept"\n' \
        '[ "$n" -ge "$(cat "$FAKE/list_after" 2>/dev/null || echo 999)" ] && touch "$FAKE/listed"\nexit 0\n'


@pytest.fixture
def gate(tmp_path):
    require("bash")
    fake, bin_dir = tmp_path / "fake", tmp_path / "bin"
    fake.mkdir(), bin_dir.mkdir()
    for tool, text in (("systemctl", SYSTEMCTL), ("curl", CURL), ("sleep", SLEEP),
                       ("journalctl", '#!/usr/bin/env bash\ncat "$FAKE/journal" 2>/dev/null; true\n'),
                       ("docker", '#!/usr/bin/env bash\n[ "$1" = stats ] && cat "$FAKE/stats"; true\n')):
        (bin_dir / tool).write_text(text)
        (bin_dir / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE": str(fake)}

    def run(states: list[str], timeout_s: int = 600, list_after: int | None = None, restarts: int = 3,
            **ledger):
        (fake / "states").write_text("".join(s + "\n" for s in states))
        if list_after is not None:
            (fake / "list_after").write_text(f"{list_after}\n")
        script = render("scripts/health-gate.sh.j2", deployment="x", served_name="m", unit=UNIT,
                        timeout_s=timeout_s, restarts=restarts, engine_digest="d", address="127.0.0.1", port=8000,
                        env_file=None, key_var="K", request_json="{}", **{"kv_marker": "", "container": None, **ledger})
        done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
        slept = int((fake / "slept").read_text()) if (fake / "slept").exists() else 0
        return done, slept
    return run


def test_the_gate_waits_through_systemd_restarts(gate):
    done, slept = gate(["activating auto-restart exit-code", "activating start success",
                        "active running success"], list_after=3)
    assert done.returncode == 0, done.stderr
    assert slept == 3 and "gave up" not in done.stderr


@pytest.mark.parametrize("state, named", [("failed failed start-limit-hit", "failed (start-limit-hit)"),
                                          ("failed failed exit-code", "failed (exit-code)"),
                                          ("inactive dead success", "inactive (success)")])
def test_a_unit_systemd_gave_up_on_fails_the_gate_at_once(gate, state, named):
    done, slept = gate(["activating auto-restart exit-code", state])
    assert done.returncode == 1
    assert f"{UNIT} gave up: {named}" in done.stderr
    assert slept == 1 and "no /v1/models listing" not in done.stderr


def test_the_timeout_names_itself_and_the_units_state(gate):
    done, _ = gate(["activating auto-restart exit-code"], timeout_s=0)
    assert done.returncode == 1
    assert "no /v1/models listing m after 0 s (the unit is activating/auto-restart)" in done.stderr
    assert "gave up" not in done.stderr


@pytest.mark.parametrize("allowed", [0, 3])
def test_a_crash_loop_fails_the_gate_once_its_restarts_are_spent(gate, allowed):
    done, slept = gate(["activating auto-restart exit-code"], restarts=allowed)
    assert done.returncode == 1
    assert f"{UNIT} gave up: a crash loop ({allowed + 1} restarts since the gate began" in done.stderr
    assert slept == allowed + 1 and "no /v1/models listing" not in done.stderr


def test_after_the_answer_the_gate_reads_the_engine_s_own_kv_line_and_its_memory(gate, tmp_path):
    """The memory ledger's measurement (templates/scripts/_memory_ledger.sh.j2): the marked lines of
    the unit's journal since this start, and the container's memory as docker stats prints it."""
    from components.config.schema import DeploymentSpec
    from components.sizing.ledger import measure
    fake = tmp_path / "fake"
    (fake / "journal").write_text("INFO loading weights\nINFO CPU KV cache size: 43,680 tokens, Maximum concurrency"
                                  " for 512 tokens per request: 85.31x\nINFO serving\n")
    (fake / "stats").write_text("1.25GiB / 15.5GiB\n")
    done, _ = gate(["active running success"], list_after=0, kv_marker="KV cache size:", container="bws-x")
    assert done.returncode == 0, done.stderr
    assert "kv-report=INFO CPU KV cache size: 43,680 tokens, Maximum concurrency" in done.stdout
    assert "memory-usage=1.25GiB\n" in done.stdout
    d = DeploymentSpec.model_validate(dict(name="x", engine="vllm", image="i", model="m", nodes=["a"], served_name="m"))
    assert measure(d, done.stdout) == {"kv_tokens": 43_680, "memory_bytes": int(1.25 * 2**30)}
    # An engine that logs no such line: nothing read, and the gate still passes.
    (fake / "journal").write_text("INFO serving\n")
    done, _ = gate(["active running success"], list_after=0, kv_marker="KV cache size:", container="bws-x")
    assert done.returncode == 0 and "kv-report=" not in done.stdout
