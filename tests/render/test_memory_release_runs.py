"""A swap waits for the old engine's memory (templates/scripts/_memory_release.sh.j2, included by
install-unit.sh.j2 for engine units), run for real with bash: /proc/meminfo and the unit's cgroup
are files under a temporary root, systemctl a stand-in whose `stop` gives back what the test says.
It checks the decision: memory back (within the bound) starts the new engine; memory still held
stops the swap with the figures before anything starts. The real kernel's figures: the lab."""

from __future__ import annotations

import os
import subprocess

import pytest

from components.config.fields import MemoryReleaseSpec
from components.steps.render import render
from tests.render.test_install_unit_runs import relocated, unit_text
from tests.tools import require

UNIT = "bws-d.service"
GB = 10**9
SYSTEMCTL = r"""#!/usr/bin/env bash
echo "systemctl $*" >> "$FAKE/calls"
case "$1" in
  is-active) [ "$(cat "$FAKE/active" 2>/dev/null)" = active ] ;;
  stop) echo inactive > "$FAKE/active"
        kb=$(( $(cat "$FAKE/available_kb") + $(cat "$FAKE/returned_kb") ))
        printf 'MemTotal: 16000000 kB\nMemAvailable: %s kB\n' "$kb" > "$ROOT/proc/meminfo" ;;
  restart) echo active > "$FAKE/active" ;;
  show) case "$3" in ControlGroup) echo /system.slice/bws-d.service ;; *) echo "" ;; esac ;;
esac
exit $?
"""


@pytest.fixture
def swap(tmp_path):
    require("bash")
    root, fake, bin_dir = tmp_path / "root", tmp_path / "fake", tmp_path / "bin"
    for d in (root / "etc/systemd/system", root / "proc", root / "sys/fs/cgroup/system.slice/bws-d.service",
              fake, bin_dir):
        d.mkdir(parents=True)
    for tool, text in (("systemctl", SYSTEMCTL), ("journalctl", "#!/usr/bin/env bash\ntrue\n"),
                       ("docker", "#!/usr/bin/env bash\ntrue\n"), ("sleep", "#!/usr/bin/env bash\ntrue\n")):
        (bin_dir / tool).write_text(text)
        (bin_dir / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE": str(fake), "ROOT": str(root)}

    def run(held: int, returned: int, bound_gb: float = 0.5, timeout_s: int = 1,
            v1: bool = False) -> subprocess.CompletedProcess:
        """An engine running and holding `held` bytes (anon + shmem) whose stop gives back `returned`;
        v1: on a host whose memory controller is cgroup v1's (a hybrid host: the lab's)."""
        (fake / "active").write_text("active\n")
        available_kb = 4 * GB // 1024
        (fake / "available_kb").write_text(f"{available_kb}\n")
        (fake / "returned_kb").write_text(f"{returned // 1024}\n")
        (root / "proc/meminfo").write_text(f"MemTotal: 16000000 kB\nMemAvailable: {available_kb} kB\n")
        if v1:
            # Its own counters, and those with its children (total_): a container's processes.
            stat = root / "sys/fs/cgroup/memory/system.slice/bws-d.service/memory.stat"
            stat.parent.mkdir(parents=True, exist_ok=True)
            stat.write_text(f"cache 999999999\nrss 0\nshmem 0\ntotal_cache 999999999\n"
                            f"total_rss {held - held // 4}\ntotal_shmem {held // 4}\n")
        else:
            (root / "sys/fs/cgroup/system.slice/bws-d.service/memory.stat").write_text(
                f"anon {held - held // 4}\nfile 999999999\nshmem {held // 4}\n")
        script = render("scripts/install-unit.sh.j2", unit_text=unit_text("2"), unit_name=UNIT, env_file=None,
                        container=None, must_stay_up=False,
                        release=MemoryReleaseSpec(bound_gb=bound_gb, timeout_s=timeout_s))
        script = relocated(script, root).replace('"${2:-/proc}/meminfo"', f'"${{2:-{root}/proc}}/meminfo"') \
            .replace("/sys/fs/cgroup", f"{root}/sys/fs/cgroup")
        return subprocess.run(["bash", "-c", script], env={**env, "BWS_INPUTS": "sha256:1"},
                              capture_output=True, text=True, timeout=60)
    return run, fake


def test_memory_back_starts_the_new_engine(swap):
    run, fake = swap
    done = run(held=3 * GB, returned=3 * GB - GB // 10)   # 0.1 GB short: within the 0.5 GB bound
    assert done.returncode == 0, done.stderr
    assert "bws-d.service stopped: 3000 MB back" in done.stderr
    calls = (fake / "calls").read_text()
    assert calls.index(f"systemctl stop {UNIT}") < calls.index(f"systemctl restart {UNIT}")


def test_memory_still_held_stops_the_swap_with_the_figures_before_anything_starts(swap):
    run, fake = swap
    done = run(held=3 * GB, returned=GB)   # 2 GB stays held (a process outside the unit, /dev/shm)
    assert done.returncode == 1
    assert ("bws-d.service held 3000 MB; 1 s after its stop MemAvailable is 4999 MB, short of the 6500 MB due "
            "(it was 4000 MB; bound 500 MB): its memory is not back") in done.stderr.replace("\n", " ")
    assert f"systemctl restart {UNIT}" not in (fake / "calls").read_text()


def test_page_cache_is_not_counted_as_held(swap):
    """The cgroup's file pages (the weights read through the page cache) are not owed back."""
    run, _ = swap
    done = run(held=GB, returned=GB)
    assert done.returncode == 0 and "1000 MB back" in done.stderr


def test_a_v1_memory_controller_counts_what_the_unit_holds(swap):
    """A hybrid host (cgroup v1's memory controller, v2's tree without it: the lab's) counts the
    unit and its children there; its v2 tree would have shown nothing held."""
    run, _ = swap
    done = run(held=3 * GB, returned=GB, v1=True)
    assert done.returncode == 1
    assert "bws-d.service held 3000 MB;" in done.stderr
