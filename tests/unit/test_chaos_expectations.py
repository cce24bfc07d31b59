"""The chaos bench checks what the lab stack runs (bench/expectations.py): every unit of ours that
the program renders for the lab stack is among the bench's expectations, on its node, so a lab
stack change cannot leave the bench checking an old shape."""

import re
from pathlib import Path

from bench.expectations import node_expectations, oneshot_services, served_models
from components.config import load_stack_file

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "render" / "golden" / "lab"
UNIT = re.compile(r"bws-[a-z0-9.-]*\.(?:service|timer)")


def lab():
    return load_stack_file(REPO / "stacks" / "Pulumi.lab.yaml")


def test_every_unit_the_program_observes_on_a_node_is_expected_there():
    want = node_expectations(lab())
    for node in want:
        observed = set(UNIT.findall((GOLDEN / f"observe-{node}.sh").read_text()))
        assert set(want[node].active_units) == observed, node


def test_every_unit_the_program_installs_is_checked():
    spec = lab()
    want = node_expectations(spec)
    expected = {u for w in want.values() for u in w.active_units} | oneshot_services(spec)
    installed = {u for f in GOLDEN.glob("*.create.sh") if f.name.endswith(("install.create.sh", "timer.create.sh"))
                 for u in UNIT.findall(f.read_text())}
    assert installed and installed <= expected
    for f in GOLDEN.glob("*-install.create.sh"):   # NAME-NODE-install: the unit on that node
        for node in want:
            if f.name.endswith(f"-{node}-install.create.sh"):
                units = set(UNIT.findall(f.read_text()))
                assert units & set(want[node].active_units), f.name


def test_images_caches_services_and_models_of_the_lab():
    spec = lab()
    want = node_expectations(spec)
    assert want["lab-1"].retired == ["glm.service"] and want["lab-2"].kept == ["embeddings.service"]
    assert len(want["lab-1"].caches) == 2 and len(want["lab-2"].caches) == 1
    assert {t.split(":")[0].rsplit("/", 1)[-1] for t in want["lab-1"].images} >= {"vllm-lab", "gateway-lab"}
    assert served_models(spec) == [d.served_name for d in spec.deployments] and len(served_models(spec)) == 3


def test_the_bench_reaches_every_node_it_checks():
    """Each stack node's expectations are checked on the lab node at its address (a bench once
    looked them up by the container's name and stopped at its first check: KeyError 'lab-1')."""
    from bench import chaos_bench

    assert set(chaos_bench.EXPECT) <= set(chaos_bench.NODES)
    for node in lab().nodes:
        assert chaos_bench.NODES[node.name].mgmt_ip == str(node.host)
    assert chaos_bench.HEAD.mgmt_ip == str(next(n.host for n in lab().nodes if n.name == lab().deployments[0].nodes[0]))
