"""The watchdog's script (templates/scripts/watchdog.sh.j2, as the lab stack renders it for `tiny`)
run for real with bash on this machine, its `systemctl` and `curl` stood in for by small scripts
that answer from files the test writes: an engine that is not active is left alone and the journal
(the script's stderr) says so once per stop — its state, since when, and how to hand it back —
not every interval; once it runs again and stops again, it is said again. What it cannot check
here: systemd's own answers (tests/lab/test_lab_e2e.py runs the watchdog on a lab node)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from components import names
from components.resources.watchdog import RUN_DIR
from tests.render.golden import render_stack
from tests.tools import require

ENGINE = "bws-tiny.service"
TAG = "[blackwell watchdog tiny]"

SYSTEMCTL = """#!/bin/sh
# is-active --quiet UNIT | show -p A -p B ... UNIT | restart UNIT: from the files in $FAKE
case "$1" in
  is-active) [ "$(cat "$FAKE/ActiveState")" = active ] ;;
  show)
    shift
    while [ "$1" = -p ]; do
      if [ "$3" = --value ]; then cat "$FAKE/$2"; exit 0; fi
      printf '%s=%s\\n' "$2" "$(cat "$FAKE/$2" 2>/dev/null)"
      shift 2
    done ;;
  restart) echo "$2" >> "$FAKE/restarted" ;;
esac
"""
CURL = """#!/bin/sh
# The engine's /metrics: its work counters from $FAKE/work (none: no answer), one more token at
# every read while $FAKE/moving says so. A chat completion: answered while $FAKE/answers says so.
for a in "$@"; do last=$a; done
case "$last" in
  */metrics)
    [ -f "$FAKE/work" ] || exit 7
    work=$(cat "$FAKE/work")
    if [ "$(cat "$FAKE/moving" 2>/dev/null)" = yes ]; then echo $((work + 1)) > "$FAKE/work"; fi
    printf '# TYPE vllm:prompt_tokens_total counter\n'
    printf 'vllm:prompt_tokens_total{engine="0",model_name="tiny"} 1.0e+03\n'
    printf 'vllm:generation_tokens_total{engine="0",model_name="tiny"} %s\n' "$work"
    printf 'vllm:num_requests_running{engine="0",model_name="tiny"} 4.0\n' ;;
  *) if [ "$(cat "$FAKE/answers")" = yes ]; then echo '{"choices": [{"message": {"content": "hi"}}]}'; else exit 7; fi ;;
esac
"""


def started_long_ago() -> str:
    """A start stamp a day before now on the host's monotonic clock, however recently it booted
    (the script compares it with /proc/uptime; a fresh CI machine has been up for minutes)."""
    uptime_s = float(Path("/proc/uptime").read_text().split()[0])
    return str(int(uptime_s * 1_000_000) - 86_400 * 1_000_000)


@pytest.fixture
def watchdog(tmp_path: Path):
    installer = render_stack("lab")["tiny-watchdog-timer.create.sh"]
    script = installer.split("<<'BWS_SCRIPT_EOF'\n", 1)[1].split("BWS_SCRIPT_EOF", 1)[0]
    assert script.count(RUN_DIR) == 1
    run_dir, fake, bin_dir = tmp_path / "run", tmp_path / "fake", tmp_path / "bin"
    for d in (fake, bin_dir):
        d.mkdir()
    (tmp_path / "watchdog.sh").write_text(script.replace(RUN_DIR, str(run_dir))
                                          .replace(names.TEXTFILE_DIR, str(tmp_path / "textfile")))
    for name, text in (("systemctl", SYSTEMCTL), ("curl", CURL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE": str(fake)}

    def engine(active_state: str, sub_state: str, result: str = "success", since: str = "",
               stamp: str = "", answers: str = "no", invocation: str = "run-1") -> None:
        for key, value in (("ActiveState", active_state), ("SubState", sub_state), ("Result", result),
                           ("InactiveEnterTimestamp", since), ("InactiveEnterTimestampMonotonic", stamp),
                           ("InvocationID", invocation), ("ActiveEnterTimestampMonotonic", started_long_ago()),
                           ("answers", answers)):
            (fake / key).write_text(value + "\n")

    def tick() -> list[str]:
        """One run of the timer's service: the watchdog's own journal lines."""
        done = subprocess.run([require("bash"), str(tmp_path / "watchdog.sh")], env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return [line for line in done.stderr.splitlines() if line.startswith(TAG)]

    return engine, tick, fake


def test_an_engine_stopped_by_hand_is_told_once_per_stop(watchdog):
    engine, tick, fake = watchdog
    engine("inactive", "dead", since="Fri 2026-12-04 20:00:00 UTC", stamp="1000")
    first = tick()
    assert len(first) == 1, first
    line = first[0]
    assert f"not checking {ENGINE}: it is inactive (dead, result success) since Fri 2026-12-04 20:00:00 UTC" in line
    assert f"hand it back to the watchdog with: systemctl start {ENGINE}" in line
    assert tick() == [] and tick() == []              # every later interval: silent
    assert not (fake / "restarted").exists()          # and the engine is left as it is

    engine("active", "running", answers="yes")        # handed back: checked again
    assert tick() == []
    engine("inactive", "dead", since="Fri 2026-12-04 21:00:00 UTC", stamp="2000")   # a new stop
    again = tick()
    assert len(again) == 1 and "since Fri 2026-12-04 21:00:00 UTC" in again[0], again
    assert tick() == []


def test_a_stop_under_way_is_told_once_it_is_done(watchdog):
    """`systemctl stop` takes the engine's container a while: a check in between says nothing,
    the one after it tells of the stop, once (one stop, one line)."""
    engine, tick, fake = watchdog
    engine("deactivating", "stop", stamp="500")
    assert tick() == []
    engine("inactive", "dead", since="Fri 2026-12-04 20:00:00 UTC", stamp="1000")
    assert len(tick()) == 1 and tick() == []
    engine("activating", "start")                      # a start under way: silent too
    assert tick() == []


def test_a_failed_engine_names_its_result_and_a_restarting_one_says_systemd_has_it(watchdog):
    engine, tick, fake = watchdog
    engine("activating", "auto-restart", result="exit-code", stamp="3000")
    restarting = tick()
    assert len(restarting) == 1 and "it is activating (auto-restart): systemd restarts it" in restarting[0]
    assert "systemctl start" not in restarting[0]
    assert tick() == []
    engine("failed", "failed", result="exit-code", since="Fri 2026-12-04 22:00:00 UTC", stamp="3000")
    failed = tick()
    assert len(failed) == 1 and "it is failed (failed, result exit-code)" in failed[0], failed
    assert f"systemctl start {ENGINE}" in failed[0]
    assert tick() == []
    assert not (fake / "restarted").exists()


def test_a_wedged_engine_is_still_restarted(watchdog):
    """The skip's bookkeeping leaves the watchdog's own job as it was: failures in a row restart."""
    engine, tick, fake = watchdog
    engine("active", "running", answers="no")
    (fake / "ActiveEnterTimestampMonotonic").write_text(started_long_ago() + "\n")   # past its grace
    lines = tick() + tick()
    assert any("restarting" in line for line in lines), lines
    # The lab's engine has no Ray head (vLLM's native launch): the engine alone.
    assert (fake / "restarted").read_text().split() == [ENGINE]


def test_a_busy_engine_is_not_restarted_and_a_wedged_one_with_flat_counters_is(watchdog):
    """No answer in time while its work counters move (requests queued behind others): busy, said
    once, no failure counted however long it lasts; the same counters standing still: wedged."""
    engine, tick, fake = watchdog
    engine("active", "running", answers="no")
    (fake / "work").write_text("5000\n")
    (fake / "moving").write_text("yes\n")
    lines = [line for _ in range(6) for line in tick()]
    said = [line for line in lines if "busy, not wedged" in line]
    assert len(said) == 1 and "its work counters moved (6000 -> 6001)" in said[0], lines
    assert not (fake / "restarted").exists() and not any("restarting" in line for line in lines), lines

    (fake / "moving").write_text("no\n")              # the core stopped: /metrics answers, flat
    lines = tick() + tick()
    assert any("no completion (1 of 2 in a row)" in line for line in lines), lines
    assert (fake / "restarted").read_text().split() == [ENGINE]


def test_a_host_up_for_days_still_restarts_a_wedged_engine(watchdog, tmp_path):
    """Monotonic microseconds pass 2^31 after 36 minutes of uptime: the grace arithmetic must not
    wrap there (Debian's awk, mawk, caps printf %d at 2^31 - 1: every engine looked still loading)."""
    engine, tick, fake = watchdog
    uptime = tmp_path / "uptime"
    uptime.write_text("86400.00 1000.00\n")   # a day
    script = tmp_path / "watchdog.sh"
    script.write_text(script.read_text().replace("/proc/uptime", str(uptime)))
    engine("active", "running", answers="no")
    (fake / "ActiveEnterTimestampMonotonic").write_text(f"{(86400 - 1000) * 1_000_000}\n")  # 1000 s ago
    lines = tick() + tick()
    assert any("restarting" in line for line in lines), lines


def test_its_restarts_are_a_counter_for_node_exporter_from_zero(watchdog, tmp_path):
    """The textfile collector's file: 0 from the first run (increase() never counts a series' first
    value), one more at each restart it makes."""
    engine, tick, fake = watchdog
    prom = tmp_path / "textfile" / Path(names.watchdog_textfile("tiny")).name
    engine("active", "running", answers="yes")
    tick()
    assert f'{names.WATCHDOG_RESTARTS_METRIC}{{deployment="tiny"}} 0' in prom.read_text()
    assert f"# TYPE {names.WATCHDOG_RESTARTS_METRIC} counter" in prom.read_text()
    engine("active", "running", answers="no")
    (fake / "ActiveEnterTimestampMonotonic").write_text(started_long_ago() + "\n")
    tick() + tick()
    assert f'{names.WATCHDOG_RESTARTS_METRIC}{{deployment="tiny"}} 1' in prom.read_text()
