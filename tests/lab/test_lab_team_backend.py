"""docs/team-backend.md's move, on the operator's converged `lab` stack: export it from the file
backend, init the stack in PostgreSQL (Debian's server, a private cluster: tests/engine/pgcluster.py)
with the same passphrase, import; from there a preview, which probes both nodes, has nothing to do.
The file backend's copy is left as it was (the operator removes it once the team works from
PostgreSQL). The commands run in a copy of the project whose stack file keeps the lab's salt (the
operator's own checkout would do the same; the copy keeps `stack init` off the repository's file)."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.engine import pgcluster
from tests.engine.conftest import copy_project
from tests.engine.teamstack import pulumi
from tests.lab import topology as lab
from tests.lab.helpers import LAB_CONFIG, REPO, STACK, changes, converge_lab_stack, require_lab

pytestmark = pytest.mark.lab
LAB_STATE = "converged"  # tests/lab/conftest.py: the lab tests run grouped by the state they share


@pytest.fixture(scope="module")
def cluster():
    running = pgcluster.start()
    yield running
    pgcluster.stop(running)


def test_the_lab_stack_moves_to_postgresql_with_nothing_left_to_do(cluster, tmp_path):
    require_lab(*lab.nodes(2))
    converge_lab_stack()
    project = copy_project(tmp_path)
    shutil.copy2(LAB_CONFIG, project / "stacks" / LAB_CONFIG.name)  # with its salt: the same passphrase decrypts
    files_env = lab.pulumi_env()
    team_env = {**files_env, "PULUMI_BACKEND_URL": cluster.url(), **cluster.env()}
    exported = tmp_path / "lab.state.json"
    done = pulumi(REPO, files_env, "stack", "export", "--stack", STACK, "--file", str(exported), timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    for args in (("stack", "init", STACK), ("stack", "import", "--stack", STACK, "--file", str(exported))):
        done = pulumi(project, team_env, *args, timeout=900)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    assert (project / "stacks" / LAB_CONFIG.name).read_text() == LAB_CONFIG.read_text(), \
        "stack init rewrote the stack file"
    preview = pulumi(project, team_env, "preview", "--stack", STACK, "--json", timeout=1200)
    assert preview.returncode == 0, preview.stdout[-3000:] + preview.stderr[-2000:]
    assert changes(json.loads(preview.stdout)) == []
    # The file backend still holds the stack as it was: one checkpoint, the same resources.
    left = pulumi(REPO, files_env, "stack", "export", "--stack", STACK, timeout=900)
    assert left.returncode == 0, left.stderr[-2000:]
    assert len(json.loads(left.stdout)["deployment"]["resources"]) == \
        len(json.loads(exported.read_text())["deployment"]["resources"])
