"""A repair converges in one `up`, on the converged lab (the operator's `lab` stack): faults made
by hand, as an operator's nodes show them, are each one todo list and one `todo --up`, with no
rollback, and after it the todo list is empty (every unit, image, cache and gate of the stack as
the program expects it) and tiny answers a real completion.

First the case found by hand (tiny's rank stopped on lab-2, tiny-b's container removed,
config.json deleted from lab-2's copy of tiny), then seeded random sets of faults of the same
kinds: an engine rank stopped, its container removed, a cache file removed or truncated, a unit
file removed, a unit left failed by systemd. What the faults hit is derived from the stack file
(its deployments, their nodes and models, through the program's own names), never listed here.
BWS_REPAIR_SETS random sets (default 1 in the suite: each costs an `up` with engine restarts on
the lab's CPU; the closing figures of issue 33 come from BWS_REPAIR_SETS=10); BWS_REPAIR_SEED
replays one run; the seed and each set's figures are printed."""

from __future__ import annotations

import os
import random
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from components import names
from components.resources.model import cache_paths
from tests.lab import topology as lab
from tests.lab.helpers import REPO, SPEC, STACK, completion, converge_lab_stack, require_lab, sh, todo_list

pytestmark = pytest.mark.lab
LAB_STATE = "converged"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODE = {n.name: lab.node_at(str(n.host)) for n in SPEC.nodes}   # the stack's node name -> the lab node
SETS = int(os.environ.get("BWS_REPAIR_SETS", "1"))
UP_TIMEOUT_S = 1200
SETTLE_S = 15

# systemd leaves a unit failed: a runtime drop-in makes its start fail with no restart, then goes.
LEAVE_FAILED = """set -e
d=/run/systemd/system/{unit}.d
mkdir -p "$d"
printf '[Service]\\nExecStartPre=/bin/false\\nRestart=no\\n' > "$d/bws-repair-test.conf"
systemctl daemon-reload
systemctl restart {unit} || true
rm -rf "$d"
systemctl daemon-reload
systemctl is-failed --quiet {unit}"""


KINDS = ("rank stopped", "container removed", "cache file removed", "cache file truncated", "unit file removed",
         "unit left failed")


@dataclass(frozen=True)
class Fault:
    kind: str        # one of KINDS
    what: str
    node: str        # the stack's node name
    target: str      # at most one fault per target in a set (a unit, a cache) on a node
    command: str

    def make(self) -> None:
        sh(NODE[self.node], self.command)


def engine_nodes(d) -> list[str]:
    """The nodes that run a unit of the deployment's engine (a Ray deployment's only on its head)."""
    return list(d.nodes) if d.topology == "native" else list(d.nodes[:1])


def faults() -> list[Fault]:
    """Every fault of the five kinds on everything the lab stack deploys."""
    found: list[Fault] = []
    models = {m.name: m for m in SPEC.models}
    for d in SPEC.deployments:
        unit, container = names.engine_unit(d.name), names.engine_container(d.name)
        for node in engine_nodes(d):
            u = shlex.quote(unit)
            found += [
                Fault("rank stopped", f"{unit} stopped on {node}", node, unit, f"systemctl stop {u}"),
                Fault("container removed", f"container {container} removed on {node}", node, unit,
                      f"docker rm -f {shlex.quote(container)} >/dev/null"),
                Fault("unit file removed", f"unit file {unit} removed on {node}", node, unit,
                      f"rm -f /etc/systemd/system/{u} && systemctl daemon-reload"),
                Fault("unit left failed", f"{unit} left failed by systemd on {node}", node, unit,
                      LEAVE_FAILED.format(unit=u)),
            ]
        final, _ = cache_paths(models[d.model])
        for node in d.nodes:
            files = f"find {shlex.quote(final)} -type f ! -name '.blackwell-*' | LC_ALL=C sort"
            found += [
                Fault("cache file removed", f"the first file of {final} removed on {node}", node, final,
                      f'f=$({files} | head -1) && test -n "$f" && rm -f "$f"'),
                Fault("cache file truncated", f"the largest file of {final} cut to half on {node}", node, final,
                      f'f=$({files} | xargs ls -S | head -1) && test -n "$f" '
                      f'&& truncate -s $(( $(stat -c %s "$f") / 2 )) "$f"'),
            ]
    # Two deployments of one model on one node share its cache: one fault of each kind there.
    return list({(f.what, f.node): f for f in found}.values())


def random_set(rng: random.Random, catalogue: list[Fault]) -> list[Fault]:
    """One to three faults, on distinct targets."""
    count, chosen = rng.randint(1, 3), []
    for f in rng.sample(catalogue, len(catalogue)):
        if all((f.node, f.target) != (c.node, c.target) for c in chosen):
            chosen.append(f)
        if len(chosen) == count:
            break
    return chosen


def todo_up() -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "components.todo", "--stack", STACK, "--up"], cwd=REPO,
                          capture_output=True, text=True, timeout=UP_TIMEOUT_S, env=lab.pulumi_env())
    return done, time.monotonic() - start


def repaired_in_one_up(faults_made: list[Fault]) -> dict:
    """The faults made, their todo list, one `todo --up`: converged with no rollback."""
    for f in faults_made:
        f.make()
    # What systemd restarts by itself (RestartSec=10) it has restarted when the operator looks.
    time.sleep(SETTLE_S)
    pending = todo_list()
    done, took = todo_up()
    out = done.stdout + done.stderr
    figures = {"faults": [f.what for f in faults_made], "items": len(pending), "up_s": round(took, 1),
               "one_up": done.returncode == 0 and "rolled back" not in out}
    print(f"repair: {figures}")
    assert done.returncode == 0, out[-6000:]
    assert "rolled back" not in out, out[-6000:]
    left = todo_list()
    assert left == [], left
    assert completion()["choices"]
    return figures


@pytest.fixture(scope="module")
def converged():
    require_lab(*NODE.values())
    converge_lab_stack()


def test_the_catalogue_covers_every_deployment_and_every_kind():
    catalogue = faults()
    for d in SPEC.deployments:
        unit = names.engine_unit(d.name)
        assert {f.node for f in catalogue if f.target == unit} == set(engine_nodes(d)), d.name
    assert {f.kind for f in catalogue} == set(KINDS)


def test_the_case_found_by_hand_converges_in_one_up(converged):
    tiny = next(d for d in SPEC.deployments if d.name == "tiny")
    tiny_b = next(d for d in SPEC.deployments if d.name == "tiny-b")
    rank1, b_head = tiny.nodes[1], tiny_b.nodes[0]
    final, _ = cache_paths(next(m for m in SPEC.models if m.name == tiny.model))
    repaired_in_one_up([
        Fault("rank stopped", f"{names.engine_unit('tiny')} stopped on {rank1}", rank1, "u",
              f"systemctl stop {names.engine_unit('tiny')}"),
        Fault("container removed", f"tiny-b's container removed on {b_head}", b_head, "c",
              f"docker rm -f {names.engine_container('tiny-b')} >/dev/null"),
        Fault("cache file removed", f"config.json removed from tiny's cache on {rank1}", rank1, "m",
              f"rm -f {final}/config.json"),
    ])


def test_random_fault_sets_converge_in_one_up_each(converged):
    seed = int(os.environ.get("BWS_REPAIR_SEED", str(random.SystemRandom().randrange(1 << 32))))
    print(f"repair: seed {seed} (replay: BWS_REPAIR_SEED={seed}), {SETS} set(s)")
    rng, catalogue = random.Random(seed), faults()
    results = [repaired_in_one_up(random_set(rng, catalogue)) for _ in range(SETS)]
    assert all(r["one_up"] for r in results), results

