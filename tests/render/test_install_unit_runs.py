"""The unit's install and env scripts (templates/scripts/install-unit.sh.j2, install-env.sh.j2)
run for real with bash on this machine, their absolute paths moved under a temporary root and
systemctl a stand-in that keeps the unit's state in files. They check what the scripts promise:
a unit restarts only when its text, the inputs it started with (BWS_INPUTS: the image, the env
file's generation) or its running state say so; a unit an earlier version installed is adopted
without a restart; the env file is written 0600, atomically, and its generation changes exactly
when its content does. What it cannot check here: the real systemd (the lab tests do)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from components.steps.render import render
from components.facts import sha256_text
from components.resources.unit import container_unit_text
from tests.tools import require

UNIT = "bws-d.service"
SYSTEMCTL = r"""#!/usr/bin/env bash
# A stand-in for systemctl: the unit's state in files under $FAKE.
echo "systemctl $*" >> "$FAKE/calls"
case "$1" in
  is-active) [ "$(cat "$FAKE/active" 2>/dev/null)" = active ] ;;
  restart)
    n=$(( $(cat "$FAKE/starts" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$FAKE/starts"
    echo active > "$FAKE/active"; date '+%a %Y-%m-%d %H:%M:%S %Z' > "$FAKE/since" ;;
  show)
    case "$3" in
      InvocationID) echo "invocation-$(cat "$FAKE/starts" 2>/dev/null || echo 0)" ;;
      ActiveEnterTimestamp) cat "$FAKE/since" 2>/dev/null || echo "" ;;
      NeedDaemonReload,LoadState)
        echo NeedDaemonReload=no
        if [ -f "$FAKE/lost" ]; then echo LoadState=not-found; else echo LoadState=loaded; fi ;;
      *) echo no ;;
    esac ;;
esac
exit $?
"""


@pytest.fixture
def node(tmp_path):
    require("bash")
    root, fake, bin_dir = tmp_path / "root", tmp_path / "fake", tmp_path / "bin"
    for d in (root / "etc/systemd/system", fake, bin_dir):
        d.mkdir(parents=True)
    (bin_dir / "systemctl").write_text(SYSTEMCTL)
    (bin_dir / "journalctl").write_text("#!/usr/bin/env bash\ntrue\n")
    # `docker inspect --format {{.Image}} CONTAINER`: the image the unit's container runs.
    (bin_dir / "docker").write_text('#!/usr/bin/env bash\ncat "$FAKE/image"\n')
    for tool in ("systemctl", "journalctl", "docker"):
        (bin_dir / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE": str(fake)}
    return root, fake, env


def relocated(script: str, root: Path) -> str:
    for path in ("/etc/systemd/system", "/var/lib/blackwell-serving", "/etc/blackwell-serving"):
        script = script.replace(path, f"{root}{path}")
    return script


def unit_text(flag: str = "1") -> str:
    return container_unit_text(component="Deployment d", description="d", container="bws-d", image="img:1",
                               command=["serve", "--flag", flag], docker_args=[], environment={"A": "1"})


def install(node, text: str, inputs: str, env_file: str | None = None, container: str | None = None) -> str:
    root, fake, env = node
    script = render("scripts/install-unit.sh.j2", unit_text=text, unit_name=UNIT, env_file=env_file,
                    container=container, must_stay_up=False, release=None)
    done = subprocess.run(["bash", "-c", relocated(script, root)], env={**env, "BWS_INPUTS": inputs},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stderr


def write_env(node, content: str) -> str:
    root, fake, env = node
    script = render("scripts/install-env.sh.j2", unit_name=UNIT, env_file="/etc/blackwell-serving/d.env")
    done = subprocess.run(["bash", "-c", relocated(script, root)], env=env, input=content,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().removeprefix("generation=")


def starts(node) -> int:
    path = node[1] / "starts"
    return int(path.read_text()) if path.exists() else 0


def test_a_unit_restarts_only_when_what_it_runs_changed(node):
    root, fake, _ = node
    assert "restarting: its text changed" in install(node, unit_text(), "sha256:1 g1")
    assert starts(node) == 1
    assert (root / "var/lib/blackwell-serving/units" / f"{UNIT}.inputs").read_text() == "sha256:1 g1\n"
    # A re-run with everything the same (a new version of the script): nothing restarts.
    assert "not restarted" in install(node, unit_text(), "sha256:1 g1")
    assert starts(node) == 1
    # A new image ID or env generation under the same text.
    assert "its inputs changed" in install(node, unit_text(), "sha256:2 g1")
    assert "its inputs changed" in install(node, unit_text(), "sha256:2 g2")
    assert starts(node) == 3
    # A changed flag: the file is replaced and systemd reloads it.
    calls_before = (fake / "calls").read_text().count("daemon-reload")
    assert "its text changed" in install(node, unit_text("2"), "sha256:2 g2")
    assert (fake / "calls").read_text().count("daemon-reload") == calls_before + 1
    assert (root / "etc/systemd/system" / UNIT).read_text() == unit_text("2")
    # The hash of what it wrote, for the observation to tell an edit on the node from a config change.
    assert (root / "var/lib/blackwell-serving/units" / f"{UNIT}.written").read_text() \
        == sha256_text(unit_text("2")) + "\n"
    # Stopped on the node (drift): started again.
    (fake / "active").write_text("failed\n")
    assert "it is not running" in install(node, unit_text("2"), "sha256:2 g2")
    assert starts(node) == 5
    # systemd gave up on it (start limit hit): reset before the start, so one run starts it.
    calls = (fake / "calls").read_text().splitlines()
    last = len(calls) - 1 - calls[::-1].index(f"systemctl restart {UNIT}")
    assert calls[last - 1] == f"systemctl reset-failed {UNIT}"


def test_a_unit_file_removed_on_the_node_is_put_back_without_a_restart(node):
    root, fake, _ = node
    path = root / "etc/systemd/system" / UNIT
    install(node, unit_text(), "sha256:1 g1")
    # `rm` and `daemon-reload` on the node: systemd lost the file, the unit still runs what it had.
    path.unlink()
    (fake / "lost").write_text("")
    reloads = (fake / "calls").read_text().count("daemon-reload")
    said = install(node, unit_text(), "sha256:1 g1")
    assert "put back" in said and "not restarted" in said, said
    assert starts(node) == 1 and path.read_text() == unit_text()
    assert (fake / "calls").read_text().count("daemon-reload") == reloads + 1   # systemd reads it again
    # Removed and stopped: started again. Removed while the config changed: the new text restarts it.
    path.unlink()
    (fake / "active").write_text("inactive\n")
    assert "it is not running" in install(node, unit_text(), "sha256:1 g1")
    path.unlink()
    assert "its text changed" in install(node, unit_text("2"), "sha256:1 g1")
    assert starts(node) == 3
    # Removed, and another file than the one written here comes back: not this branch.
    path.write_text(unit_text("3"))
    assert "its text changed" in install(node, unit_text("2"), "sha256:1 g1")


def test_a_unit_an_earlier_version_installed_is_adopted_unless_its_env_is_newer(node):
    root, fake, _ = node
    env_file = "/etc/blackwell-serving/d.env"
    (root / "etc/systemd/system" / UNIT).write_text(unit_text())
    (root / "etc/blackwell-serving").mkdir(parents=True)
    (root / "etc/blackwell-serving/d.env").write_text("KEY=old\n")
    os.utime(root / "etc/blackwell-serving/d.env", (1_000_000_000, 1_000_000_000))
    (fake / "active").write_text("active\n")
    (fake / "since").write_text("Sun 2020-01-05 10:00:00 UTC\n")
    assert "not restarted" in install(node, unit_text(), "sha256:1 g1", env_file)
    assert starts(node) == 0
    assert (root / "var/lib/blackwell-serving/units" / f"{UNIT}.inputs").read_text() == "sha256:1 g1\n"
    # Another such unit whose env file was rewritten after its start.
    (root / "var/lib/blackwell-serving/units" / f"{UNIT}.inputs").unlink()
    os.utime(root / "etc/blackwell-serving/d.env")
    assert "its environment changed" in install(node, unit_text(), "sha256:1 g1", env_file)
    assert starts(node) == 1
    # A container unit of an earlier version: adopted while its container runs the image its
    # inputs name; restarted when the same `up` brought another image under the same tag.
    for running, restarts in (("sha256:1", 1), ("sha256:0", 2)):
        (root / "var/lib/blackwell-serving/units" / f"{UNIT}.inputs").unlink()
        (fake / "image").write_text(running + "\n")
        install(node, unit_text(), "sha256:1 g1", container="bws-d")
        assert starts(node) == restarts, running


def test_the_env_file_is_root_only_and_its_generation_follows_its_content(node):
    root = node[0]
    path = root / "etc/blackwell-serving/d.env"
    first = write_env(node, "KEY=one\n")
    assert path.read_text() == "KEY=one\n" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not any(p.name.endswith(".tmp") for p in path.parent.iterdir())
    assert write_env(node, "KEY=one\n") == first
    second = write_env(node, "KEY=two\n")
    assert second != first and path.read_text() == "KEY=two\n"
    assert "KEY" not in second and "two" not in second  # a token, not the content
    # A file an earlier version wrote (no generation yet), same content: kept as it is.
    (root / "etc/blackwell-serving/d.env.generation").unlink()
    os.utime(path, (1_000_000_000, 1_000_000_000))
    third = write_env(node, "KEY=two\n")
    assert third not in (first, second) and path.stat().st_mtime == 1_000_000_000
