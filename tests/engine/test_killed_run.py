"""A `pulumi up` killed with SIGKILL mid-step, on the real engine: the language host, the
provider and the step's own process (a local command, so the test needs no node) are gone
within seconds, not minutes (components/reaper.py, started by the program)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from components import reaper
from tests.engine.conftest import engine_env, pulumi

# The project's program replaced by one slow step; it starts the watcher as __main__.py does.
PROGRAM = """
import pulumi_command as command
from components import reaper
reaper.start()
command.local.Command("slow", create="sleep 240")
"""


def test_nothing_of_a_killed_up_outlives_it(project):
    (project / "__main__.py").write_text(PROGRAM)
    assert pulumi(project, "stack", "init", "killed").returncode == 0
    cli = subprocess.Popen(["pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "--stack", "killed"],
                           cwd=project, env=engine_env(project), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        below: dict[int, int] = {}
        deadline = time.monotonic() + 120
        names = set()
        while time.monotonic() < deadline and "sleep" not in names:  # the step is running
            below = reaper.descendants(cli.pid, exclude=-1)
            names = {reaper._name(p) for p in below}
            time.sleep(0.5)
        assert "sleep" in names, names
        assert {"pulumi-language", "pulumi-resource"} <= names, names  # comm: 15 characters
        watchers = [p for p in below if b"components.reaper" in open(f"/proc/{p}/cmdline", "rb").read()]
        assert len(watchers) == 1
        left = {p: s for p, s in below.items() if p not in watchers}
        cli.send_signal(signal.SIGKILL)
        cli.wait()
        still = reaper.survivors(left, within_s=20)
        assert still == {}, f"outlived the killed CLI: {still}"
    finally:
        cli.kill()
        cli.wait()
        reaper.end(reaper.descendants(os.getpid(), exclude=os.getpid()), grace_s=1)
