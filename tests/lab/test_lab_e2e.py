"""End to end on the lab, on the real engine: preview, up, a second up that does nothing, and a
destroy that gives the nodes back. Every assertion reads the nodes themselves (systemctl,
docker, ray, HTTP). Needs `tests/lab/lab up`; runs the operator's `lab` stack (.state/backend)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.lab import topology as lab

pytestmark = pytest.mark.lab

REPO = lab.REPO_ROOT
NODE1, NODE2 = lab.nodes(2)
STACK = "lab"
UNITS = {NODE1: ["bws-tiny-ray-head.service", "bws-tiny.service"], NODE2: ["bws-tiny-ray-worker.service"]}
MODEL_DIR = "/var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1"


def sh(node: lab.Node, command: str, check: bool = True) -> str:
    run = subprocess.run(node.ssh_argv(command), capture_output=True, text=True, timeout=120)
    if check and run.returncode != 0:
        raise AssertionError(f"{node.name}: {command!r} failed: {run.stderr}")
    return run.stdout.strip()


def pulumi(*args: str, timeout: int = 2400) -> subprocess.CompletedProcess:
    return subprocess.run(["pulumi", *args, "--stack", STACK, "--non-interactive"], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, env=lab.pulumi_env())


def unit_prop(node, unit, prop) -> str:
    return sh(node, f"systemctl show -p {prop} --value {unit}")


def container_ids(node) -> str:
    return sh(node, "docker ps -q --no-trunc --filter name=bws- | sort")


def changes(preview: dict) -> list[tuple[str, str]]:
    return [(s["op"], s["urn"].split("::")[-1]) for s in preview.get("steps", []) if s["op"] != "same"]


def node_state(node: lab.Node) -> str:
    run = subprocess.run(node.ssh_argv("systemctl is-system-running || true"), capture_output=True,
                         text=True, timeout=30)
    return run.stdout.strip() if run.returncode == 0 else "unreachable"


@pytest.fixture(scope="module")
def lab_ready():
    states = {n.name: node_state(n) for n in (NODE1, NODE2)}
    if any(s not in ("running", "degraded") for s in states.values()):
        message = f"the lab is not up ({states}): run tests/lab/lab up"
        # In CI the lab is always started first: a lab that is not up is a failure there.
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    key = lab.STATE_DIR / "api-key"
    if not key.exists():
        key.write_text(os.urandom(18).hex() + "\n")
        key.chmod(0o600)
    select = subprocess.run(["pulumi", "stack", "select", "--create", STACK, "--non-interactive"],
                            cwd=REPO, capture_output=True, text=True, env=lab.pulumi_env())
    assert select.returncode == 0, select.stderr
    # A clean start: whatever an earlier run left is given back first.
    down = pulumi("destroy", "--yes", "--skip-preview")
    assert down.returncode == 0, down.stdout[-3000:] + down.stderr[-3000:]
    return key.read_text().strip()


@pytest.fixture(scope="module")
def converged(lab_ready):
    before = {"glm": sh(NODE1, f"systemctl is-active {lab.GLM_UNIT} || true"),
              "embeddings_pid": unit_prop(NODE2, lab.EMBEDDINGS_UNIT, "MainPID")}
    preview = pulumi("preview", "--json")
    assert preview.returncode == 0, preview.stderr[-3000:]
    pending = changes(json.loads(preview.stdout))
    up = pulumi("up", "--yes", "--skip-preview")
    assert up.returncode == 0, up.stdout[-6000:] + up.stderr[-3000:]
    return {"before": before, "pending": pending, "api_key": lab_ready}


def test_preview_before_up_lists_every_step(converged):
    names = {name for op, name in converged["pending"] if op == "create"}
    for expected in ("lab-1-glm-retire", "lab-2-embeddings-check", "vllm-lab-build", "vllm-lab-sync-lab-2",
                     "tiny-fetch", "tiny-to-lab-2", "tiny-preflight-engine", "lab-1-fabric-check",
                     "lab-2-fabric-check", "tiny-ray-head-lab-1-install", "tiny-ray-worker-lab-2-install",
                     "tiny-ray-ready", "tiny-lab-1-install", "tiny-health"):
        assert expected in names


def test_glm_retired_and_embeddings_untouched(converged):
    assert converged["before"]["glm"] == "active"
    assert sh(NODE1, f"systemctl is-active {lab.GLM_UNIT} || true") == "inactive"
    assert sh(NODE1, f"systemctl is-enabled {lab.GLM_UNIT} || true") == "disabled"
    assert unit_prop(NODE2, lab.EMBEDDINGS_UNIT, "MainPID") == converged["before"]["embeddings_pid"]


def test_derived_image_built_on_node1_and_same_id_on_node2(converged):
    tag = sh(NODE1, "docker images --format '{{.Repository}}:{{.Tag}}' blackwell-serving/vllm-lab")
    assert tag.startswith("blackwell-serving/vllm-lab:")
    probe = "-c 'import transformers; print(transformers.__version__)'"
    version = sh(NODE1, f"docker run --rm --entrypoint python3 {tag} {probe}")
    base_version = sh(NODE1, f"docker run --rm --entrypoint python3 {lab.REGISTRY}/lab/vllm-cpu:0.32.0 {probe}")
    numbers = lambda v: tuple(int(p) for p in v.split(".")[:3])
    # A real upgrade layer: newer than the base's own transformers, and >= 5 as the stack asks.
    assert numbers(version) > numbers(base_version), (version, base_version)
    assert numbers(version) >= (5, 0, 0)
    id1 = sh(NODE1, f"docker image inspect -f '{{{{.Id}}}}' {tag}")
    id2 = sh(NODE2, f"docker image inspect -f '{{{{.Id}}}}' {tag}")
    assert id1 == id2


def test_model_cached_and_verified_on_both_nodes(converged):
    for node in (NODE1, NODE2):
        sh(node, f"cd {MODEL_DIR} && sha256sum -c --quiet .blackwell-manifest.sha256")
        assert "config.json" in sh(node, f"ls {MODEL_DIR}")


def test_ray_cluster_spans_both_nodes_on_the_fabric(converged):
    probe = ("import ray; ray.init(address='auto', logging_level='ERROR'); "
             "print(sorted(n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']))")
    out = sh(NODE1, f"docker exec bws-tiny-ray-head python3 -c \"{probe}\"")
    assert out.splitlines()[-1] == str(sorted([NODE1.fabric_ip, NODE2.fabric_ip]))


def test_engine_serves_a_real_completion(converged):
    request = urllib.request.Request(
        f"http://{NODE1.mgmt_ip}:8000/v1/chat/completions",
        data=json.dumps({"model": "tiny-llama", "max_tokens": 8,
                         "messages": [{"role": "user", "content": "hello"}]}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {converged['api_key']}"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        body = json.load(reply)
    assert body["choices"][0]["message"]["content"] is not None
    outputs = json.loads(pulumi("stack", "output", "--json").stdout)
    assert outputs["endpoints"]["tiny"] == f"http://{NODE1.mgmt_ip}:8000/v1"


def test_engine_rejects_a_request_without_the_key(converged):
    request = urllib.request.Request(f"http://{NODE1.mgmt_ip}:8000/v1/models")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=30)
    assert err.value.code == 401


def test_second_up_changes_nothing(converged):
    stamps = {(n.name, u): unit_prop(n, u, "ActiveEnterTimestamp") for n, units in UNITS.items() for u in units}
    containers = {n.name: container_ids(n) for n in (NODE1, NODE2)}
    preview = pulumi("preview", "--json")
    assert changes(json.loads(preview.stdout)) == []
    up = pulumi("up", "--yes", "--skip-preview")
    assert up.returncode == 0
    assert {(n.name, u): unit_prop(n, u, "ActiveEnterTimestamp") for n, units in UNITS.items() for u in units} == stamps
    assert {n.name: container_ids(n) for n in (NODE1, NODE2)} == containers


def test_destroy_gives_the_nodes_back(converged):
    pid = unit_prop(NODE2, lab.EMBEDDINGS_UNIT, "MainPID")
    down = pulumi("destroy", "--yes", "--skip-preview")
    assert down.returncode == 0, down.stdout[-3000:]
    for node, units in UNITS.items():
        for unit in units:
            assert sh(node, f"systemctl show -p LoadState --value {unit}") == "not-found"
        assert container_ids(node) == ""
        assert sh(node, "docker images -q blackwell-serving/vllm-lab") == ""
        assert sh(node, f"test -e {MODEL_DIR} && echo present || echo gone") == "gone"
    assert sh(NODE1, f"systemctl is-active {lab.GLM_UNIT} || true") == "active"
    assert sh(NODE1, f"systemctl is-enabled {lab.GLM_UNIT} || true") == "enabled"
    assert unit_prop(NODE2, lab.EMBEDDINGS_UNIT, "MainPID") == pid
