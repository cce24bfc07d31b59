"""An image whose content changed leaves no old tag behind (templates/scripts/_retire_tags.sh.j2),
on a lab node's real Docker: of a derived image's repository, the tags no container uses go once
a container runs the new one; a tag a container (even a stopped one) still uses stays, as do a
build under way (its staging tag), another derived image and the operator's own images.

The images are the node's engine image with a label each (no layer, no network: instant), the
container a `sleep` of the engine image's coreutils; all removed after."""

from __future__ import annotations

import uuid

import pytest

from components import names
from components.steps.render import environment
from tests.lab import topology as lab
from tests.lab.dist import run_script, ssh
from tests.lab.helpers import require_lab

pytestmark = pytest.mark.lab
LAB_STATE = "converged"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE = lab.nodes(1)[0]
RETIRE = ('{% set step = "retire test" %}{% include "scripts/_prelude.sh.j2" %}'
          '{% include "scripts/_retire_tags.sh.j2" %}retire_older_tags {{ keep | q }}\n')


def tags(repository: str) -> set[str]:
    out = ssh(NODE, f"docker image ls --format '{{{{.Repository}}}}:{{{{.Tag}}}}' {repository}").stdout
    return set(out.split())


def test_old_tags_go_once_no_container_uses_them_and_nothing_else_does():
    require_lab(NODE)
    listed = "docker image ls --format '{{.Repository}}:{{.Tag}}'"
    ours = f"^{names.DERIVED_IMAGE_REPOSITORY}/"
    base = ssh(NODE, f"{listed} | grep -v -e '<none>' -e '{ours}' | head -n1").stdout.strip()
    assert base, f"{NODE.name} holds no image to label (the lab is converged in this phase)"
    run = uuid.uuid4().hex[:8]
    repo = f"{names.DERIVED_IMAGE_REPOSITORY}/retire-test-{run}"
    other = f"{names.DERIVED_IMAGE_REPOSITORY}/retire-other-{run}"
    operators = f"lab/retire-operator-{run}"
    made = {"unused": f"{repo}:old-unused", "running": f"{repo}:old-running", "stopped": f"{repo}:old-stopped",
            "staging": f"{repo}:new-staging", "new": f"{repo}:new", "other": f"{other}:old",
            "operators": f"{operators}:old"}
    running, stopped = f"retire-test-{run}-running", f"retire-test-{run}-stopped"
    try:
        for label, tag in made.items():
            ssh(NODE, f"printf 'FROM {base}\\nLABEL retire-test={run}-{label}\\n' | docker build -q -t {tag} -",
                timeout=120)
        ssh(NODE, f"docker run -d --name {running} --entrypoint sleep {made['running']} 300")
        ssh(NODE, f"docker create --name {stopped} --entrypoint true {made['stopped']}")

        result = run_script(NODE, environment().from_string(RETIRE).render(keep=made["new"]), timeout=120)
        assert result.rc == 0, result.stderr

        assert tags(repo) == {made[k] for k in ("running", "stopped", "staging", "new")}, result.stderr
        assert tags(other) == {made["other"]} and tags(operators) == {made["operators"]}
        assert f"removed {made['unused']}" in result.stderr, result.stderr

        # The base image itself, or a tag outside ours, is never a reason to remove anything.
        result = run_script(NODE, environment().from_string(RETIRE).render(keep=base), timeout=120)
        assert result.rc == 0 and "removed" not in result.stderr, result.stderr
    finally:
        ssh(NODE, f"docker rm -f {running} {stopped} >/dev/null 2>&1; "
                  f"docker image rm {' '.join(made.values())} >/dev/null 2>&1; true", check=False)
