"""The launch's one list of ranks: the engine probe checks exactly the command lines the units run,
for every shipped stack (each rank's argv, in the unit's ExecStart as systemd quotes it, and in
the probe's list, in rank order)."""

from __future__ import annotations

import json
import shlex

import pytest

from components import names
from components.config import load_stack_file
from components.steps.render import systemd_quote
from tests.render.golden import render_stack, unit_placements
from tests.unit.config.stacks import REPO, SHIPPED



def probe_argvs(script: str) -> list[list[str]]:
    """The probe's list of rank command lines: the JSON word of its program's command line."""
    line = next(line for line in script.splitlines() if "'[[" in line)
    return json.loads(next(word for word in shlex.split(line) if word.startswith("[[")))


def exec_start(unit_text: str) -> str:
    """The ExecStart value, its continuation lines joined."""
    lines = unit_text.split("ExecStart=", 1)[1].splitlines()
    out = []
    for line in lines:
        out.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    return " ".join(out)


@pytest.mark.parametrize("stack", SHIPPED)
def test_the_probe_checks_the_argv_every_unit_runs(stack):
    # The rendered program (one mocked build, cached) and the stack file it was built from.
    files, spec = render_stack(stack), load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")
    units = {(node, unit): golden for node, unit, golden in unit_placements(stack)}
    for d in spec.deployments:
        probe = files[f"{d.name}-preflight-engine.create.sh"]
        argvs = probe_argvs(probe)
        ranks = list(d.nodes) if d.topology == "native" else list(d.nodes[:1])
        assert len(argvs) == len(ranks), d.name
        for node, argv in zip(ranks, argvs):
            start = exec_start(files[units[(node, names.engine_unit(d.name))]])
            # argv[0] is a program name the runtime resolves (the image's PATH, the venv's bin).
            program, _, rest = start.partition(" ".join(systemd_quote(a) for a in argv[1:]))
            last_word = program.rstrip().rsplit(" ", 1)[-1].strip('"')
            assert rest == "" and last_word.rsplit("/", 1)[-1] == argv[0], (d.name, node, start)
