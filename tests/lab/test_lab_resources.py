"""The GPU and memory preflight on the lab's CPU nodes, for real: the script the program renders
for each node of the lab stack (stacks/Pulumi.lab.yaml declares gpu.kind cpu), run over SSH on
the node as the step runs it (bash, script on stdin). Read-only: it changes nothing there. It
must say "no GPU expected" with the key that says so, and report the node's measured memory —
never skip silently."""

from __future__ import annotations

import re
import subprocess

import pytest

from components.config.load import load_stack_file
from components.preflight.resources import script_values
from components.steps.render import render
from tests.lab import topology as lab
from tests.lab.helpers import LAB_CONFIG, require_lab

pytestmark = pytest.mark.lab
LAB_STATE = "converged"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

NODES = lab.nodes(2)


@pytest.mark.parametrize("index", [0, 1])
def test_cpu_node_resources_check_says_no_gpu_expected(index):
    node = NODES[index]
    require_lab(node)
    spec = load_stack_file(LAB_CONFIG)
    name = spec.nodes[index].name
    script = render("scripts/preflight-resources.sh.j2", **script_values(spec, name))
    def available_gb() -> float:
        kb = subprocess.run(node.ssh_argv("awk", "'/^MemAvailable:/ { print $2 }'", "/proc/meminfo"),
                            capture_output=True, text=True, timeout=30).stdout
        return int(kb) * 1024 / 1e9
    # The node's own MemAvailable, measured there just before and after the check (not a fixture's
    # figure): the lab's nodes share the host's memory with the other pair's engines, which start
    # and stop meanwhile, so the report must lie between the two reads, not equal one of them.
    before = available_gb()
    run = subprocess.run(node.ssh_argv("bash", "-s"), input=script, capture_output=True, text=True, timeout=60)
    after = available_gb()
    print(run.stderr)
    assert run.returncode == 0, run.stderr
    assert (f"no GPU expected: the stack declares none on {name} (nodes[{index}].gpu.kind cpu); "
            "nvidia-smi, driver CUDA and container GPU checks not run") in run.stderr
    reported = float(re.search(r"memory: MemAvailable ([0-9.]+) GB", run.stderr).group(1))
    assert min(before, after) - 0.5 < reported < max(before, after) + 0.5, (reported, before, after)
    # The lab's nodes really have no GPU tooling: the message is not hiding a check that could run.
    assert subprocess.run(node.ssh_argv("command", "-v", "nvidia-smi"), capture_output=True, timeout=30).returncode != 0
