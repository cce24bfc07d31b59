"""An `up` killed in the middle of the image copy, on the lab and the real engine, and the
operator's next run (`python -m components.todo --up`) with nothing done by hand in between: it
clears the dead run's lock of the backend and says so, names in one line the step it resumes
(and shows none of Pulumi's advice to `pulumi refresh`, which does not apply), and converges (the image with one ID on both nodes, the model cache verified in full, a completion);
a preview after it has nothing to do. No process of the killed run outlives it on this machine.
The lab stack's first deployment (tiny, one rank on each node) as its own stack."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from components.operator import reaper
from components.resources.image import staging_dir
from tests.lab import topology as lab
from tests.lab.helpers import LAB_MODEL_DIR, REPO, Stack, api_key, completion, destroy_lab_stack, nodes_as_found, require_lab, sh

pytestmark = pytest.mark.lab
LAB_STATE = "clean"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE1, NODE2 = lab.nodes(2)
STAGING = staging_dir("/var/lib/blackwell-serving")
# Kill once this much of the image is kept on the peer: the copy is well under way.
KILL_AT_BYTES = 200 * 1024 * 1024


@pytest.fixture(scope="module")
def lab_clean():
    require_lab(NODE1, NODE2)
    api_key()
    destroy_lab_stack()
    assert nodes_as_found()["our_units"] == {NODE1.name: "0", NODE2.name: "0"}, "the lab has units of ours left"


def staged_bytes() -> int:
    out = sh(NODE2, f"du -sb {STAGING} 2>/dev/null | cut -f1 || true", check=False)
    return int(out) if out.isdigit() else 0


def kill_during_the_image_copy(cli: subprocess.Popen, limit_s: float = 900) -> dict[int, int]:
    """SIGKILL to the CLI once the peer keeps KILL_AT_BYTES of the image; returns the processes
    the run had under it just before (pid -> start time)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if cli.poll() is not None:
            pytest.fail(f"the up ended (exit {cli.returncode}) before the image copy was under way")
        if staged_bytes() >= KILL_AT_BYTES:
            below = reaper.descendants(cli.pid, exclude=-1)
            cli.send_signal(signal.SIGKILL)
            cli.wait()
            return below
        time.sleep(2)
    pytest.fail(f"no image copy to lab-2 under way after {limit_s} s")


def whole_image_over_the_fabric(c: dict) -> None:
    """The copy this test kills is the whole image's: lab-2 does not pull the base itself (the lab
    stack's peers_pull_base), so the fabric carries all 3.4 GB and the kill meets it under way."""
    for image in c["blackwell-serving:images"]:
        image["peers_pull_base"] = False


def test_a_killed_up_is_resumed_by_the_next_run(lab_clean, tmp_path):
    stack = Stack(tmp_path, "lab-killed", whole_image_over_the_fabric)
    # lab-2 must hold no layer of the image, or the copy is too short to kill: the base stays on a
    # node after a destroy (it is the operator's), so another stack's pull of it may have left it.
    for image in stack.config["blackwell-serving:images"]:
        sh(NODE2, f"docker image rm {image['base']} >/dev/null 2>&1 || true", check=False)
    try:
        log = tmp_path / "killed-up.log"
        with log.open("w") as out:
            cli = subprocess.Popen(["pulumi", "up", "--yes", "--skip-preview", "--non-interactive",
                                    "--stack", stack.name], cwd=stack.project, env=stack.env,
                                   stdout=out, stderr=subprocess.STDOUT)
        try:
            below = kill_during_the_image_copy(cli)
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.wait()
        # Its language host, provider and ssh end with it (components/operator/reaper.py).
        left = reaper.survivors(below, within_s=30)
        assert left == {}, f"outlived the killed up: {left}"

        resumed = subprocess.run([sys.executable, "-m", "components.todo", "--up", "--stack", stack.name,
                                  "--work-dir", str(stack.project)], cwd=REPO, env=stack.env,
                                 capture_output=True, text=True, timeout=1800)
        assert resumed.returncode == 0, resumed.stdout[-4000:] + resumed.stderr[-3000:]
        assert "cleared the lock of stack lab-killed" in resumed.stderr, resumed.stderr[-3000:]
        # One line of ours names what is resumed; none of Pulumi's advice for an unknown state.
        [line] = [ln for ln in resumed.stderr.splitlines() if ln.startswith("note: resuming")]
        assert "lab-2" in line and "interrupted" in line, resumed.stderr[-3000:]
        for words in ("unknown state", "pulumi refresh", "pending operations from previous deployment"):
            assert words not in resumed.stdout + resumed.stderr, resumed.stdout[-3000:]

        ids = {n.name: sh(n, "docker images -q --no-trunc blackwell-serving/vllm-lab | head -1") for n in (NODE1, NODE2)}
        assert len(set(ids.values())) == 1 and all(ids.values()), ids
        assert sh(NODE2, f"ls {STAGING} 2>/dev/null | wc -l", check=False) == "0", "staging left on lab-2"
        for node in (NODE1, NODE2):
            sh(node, f"cd {LAB_MODEL_DIR} && sha256sum -c --quiet .blackwell-manifest.sha256")
        assert completion()["choices"]

        again = stack.run("preview", "--expect-no-changes")
        assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-2000:]
    finally:
        stack.destroy()
