"""End to end on the lab, on the real engine: preview, up, a second up that does nothing, and a
destroy that gives the nodes back. Every assertion reads the nodes themselves (systemctl,
docker, /proc, HTTP). Needs `tests/lab/lab up`; runs the operator's `lab` stack (.state/backend)."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request

import pytest
import yaml

from components import names
from components.resources.image import image_tag
from tests.lab import topology as lab
from tests.lab.outcome import failed
from tests.lab.helpers import (EXPECT, LAB_CONFIG, LAB_MODEL_DIR, SPEC, Stack, api_key, changes, container_ids,
                               converge_lab_stack, deployment, image_of, journal_since, node_now, our_units, ours_left,
                               project_with_a_module_moved, pulumi, require_lab, sh, stack_name, todo_list, unit_prop,
                               watchdog_state)
from tests.wait import wait_until

pytestmark = pytest.mark.lab
LAB_STATE = "gives-back"  # tests/lab/conftest.py: the lab tests run grouped by the state they share

REPO = lab.REPO_ROOT
NODE1, NODE2 = lab.nodes(2)
STACK = "lab"
# Every name below comes from the stack file through the program's names (tests/lab/helpers.py).
UNITS = {n: our_units(n) for n in (NODE1, NODE2)}
TINY, TINY_B, GGUF = deployment("tiny"), deployment("tiny-b"), deployment("tiny-gguf")
ENGINE, CONTAINER = names.engine_unit(TINY.name), names.engine_container(TINY.name)


@pytest.fixture(scope="module")
def lab_ready():
    require_lab(NODE1, NODE2)
    key = api_key()
    select = subprocess.run(["pulumi", "stack", "select", "--create", STACK, "--non-interactive"],
                            cwd=REPO, capture_output=True, text=True, env=lab.pulumi_env())
    assert select.returncode == 0, select.stderr
    return key


@pytest.fixture(scope="module")
def converged(lab_ready, tmp_path_factory):
    """The operator's `lab` stack converged: the main job leaves it so (then this `up` is a no-op),
    and the lab tests share it (tests/lab/conftest.py); this module's last test destroys it. The
    first preview an operator sees is taken from a backend of its own, with nothing in its state."""
    before = {"embeddings_pid": unit_prop(NODE2, lab.EMBEDDINGS_UNIT, "MainPID")}
    first = Stack(tmp_path_factory.mktemp("first-preview"), "lab-first-preview", lambda c: None,
                  config=yaml.safe_load(LAB_CONFIG.read_text())["config"])
    preview = first.run("preview", "--json")
    assert preview.returncode == 0, preview.stderr[-3000:]
    pending = changes(json.loads(preview.stdout))
    up = pulumi("up", "--yes", "--skip-preview")
    assert up.returncode == 0, up.stdout[-6000:] + up.stderr[-3000:]
    return {"before": before, "pending": pending, "api_key": lab_ready}


@pytest.fixture(autouse=True)
def converged_again_after_a_failure(request):
    """Most tests here break the lab and end with the `up` that repairs it: one that fails before
    that `up` would hand its break to every test after it, which would then fail on it instead of
    on what they test. So after a failed test the lab stack is converged again (the destroy test,
    which ends the module, excepted)."""
    yield
    if failed(request.node) and request.node.get_closest_marker("ends_the_lab") is None:
        converge_lab_stack()


def test_preview_before_up_lists_every_step(converged):
    names = {name for op, name in converged["pending"] if op == "create"}
    for expected in ("lab-1-glm-retire", "lab-2-embeddings-check", "vllm-lab-build", "vllm-lab-sync-lab-2",
                     "tiny-upload", "tiny-fetch", "tiny-to-lab-2", "tiny-preflight-engine", "lab-1-fabric-check",
                     "lab-2-fabric-check", "lab-1-resources-check", "lab-2-resources-check",
                     "tiny-lab-2-install", "tiny-lab-1-install", "tiny-health", "tiny-rank1-watch-timer",
                     "tiny-b-ray-head-lab-2-install", "tiny-b-ray-worker-lab-1-install", "tiny-b-ray-ready"):
        assert expected in names


def test_glm_retired_and_embeddings_untouched(converged):
    # What glm was before the retire, as the retire recorded it (destroy gives that back).
    assert "active=active" in sh(NODE1, f"cat /var/lib/blackwell-serving/retired/{lab.GLM_UNIT}.state")
    assert sh(NODE1, f"systemctl is-active {lab.GLM_UNIT} || true") == "inactive"
    assert sh(NODE1, f"systemctl is-enabled {lab.GLM_UNIT} || true") == "disabled"
    assert unit_prop(NODE2, lab.EMBEDDINGS_UNIT, "MainPID") == converged["before"]["embeddings_pid"]


def test_derived_image_built_on_node1_and_same_id_on_node2(converged):
    image = image_of(TINY)
    tag = image_tag(image)
    assert sh(NODE1, f"docker images -q {tag}"), f"no {tag} on {NODE1.name}"
    probe = "-c 'import transformers; print(transformers.__version__)'"
    version = sh(NODE1, f"docker run --rm --entrypoint python3 {tag} {probe}")
    base_version = sh(NODE1, f"docker run --rm --entrypoint python3 {image.base} {probe}")
    numbers = lambda v: tuple(int(p) for p in v.split(".")[:3])
    # A real upgrade layer: newer than the base's own transformers, and >= 5 as the stack asks.
    assert numbers(version) > numbers(base_version), (version, base_version)
    assert numbers(version) >= (5, 0, 0)
    id1 = sh(NODE1, f"docker image inspect -f '{{{{.Id}}}}' {tag}")
    id2 = sh(NODE2, f"docker image inspect -f '{{{{.Id}}}}' {tag}")
    assert id1 == id2


def test_model_cached_and_verified_on_both_nodes(converged):
    for node in (NODE1, NODE2):
        sh(node, f"cd {LAB_MODEL_DIR} && sha256sum -c --quiet .blackwell-manifest.sha256")
        assert "config.json" in sh(node, f"ls {LAB_MODEL_DIR}")


def fabric_links(node, peer) -> int:
    """Established TCP connections of the engine's container on `node` to `peer`'s fabric address."""
    pid = sh(node, f"docker inspect -f '{{{{.State.Pid}}}}' {CONTAINER}")
    hex_ip = "".join(f"{int(o):02X}" for o in reversed(peer.fabric_ip.split(".")))
    return int(sh(node, f"awk '$4 == \"01\" && substr($3, 1, 8) == \"{hex_ip}\"' /proc/{pid}/net/tcp | wc -l"))


def test_one_engine_has_a_rank_on_each_node_joined_over_the_fabric(converged):
    """lab-2's rank is a headless `vllm serve` (no API) holding its half of the weights, connected
    to lab-1's rank over the fabric addresses, not the management ones."""
    log = sh(NODE2, f"docker logs {CONTAINER} 2>&1")
    assert "headless multiproc executor" in log and "TP rank 1" in log, log[-3000:]
    assert f"distributed_init_method=tcp://{NODE1.fabric_ip}:20000" in log
    assert "TP rank 0" in sh(NODE1, f"docker logs {CONTAINER} 2>&1")
    # Each rank loads its own shard of the weights (vLLM's loader, in the rank's worker process).
    assert "(Worker_TP1" in log and "Loading weights took" in log, log[-3000:]
    assert fabric_links(NODE2, NODE1) > 0
    assert "--headless" in sh(NODE2, f"docker inspect -f '{{{{.Args}}}}' {CONTAINER}")
    # No API on lab-2's rank.
    assert sh(NODE2, "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8000/health || true") == "000"


def test_ray_cluster_spans_both_nodes_on_the_fabric(converged):
    """tiny-b's Ray cluster: head on lab-2, worker on lab-1, both joined on their fabric addresses."""
    probe = ("import ray; ray.init(address='auto', logging_level='ERROR'); "
             "print(sorted(n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']))")
    head = names.ray_container(names.ray_cluster(TINY_B.name), "head")
    out = sh(NODE2, f"docker exec {head} python3 -c \"{probe}\"")
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


def test_the_api_key_is_nowhere_but_its_files(converged):
    """After a real up: the key is not in any container's config (`docker inspect`), in any
    process's arguments, in the journal, nor in the state or the step outputs in plain text."""
    key = converged["api_key"]
    for node in (NODE1, NODE2):
        for what, command in (("docker inspect", "docker ps -aq | xargs -r docker inspect"),
                              ("ps", "ps -eo args"), ("the journal", "journalctl --no-pager -q -o cat")):
            assert key not in sh(node, command), f"the API key shows in {what} on {node.name}"
    state = pulumi("stack", "export")
    assert state.returncode == 0 and key not in state.stdout
    outputs = pulumi("stack", "output", "--json")
    assert outputs.returncode == 0 and key not in outputs.stdout
    # The key did reach the engine: a request with it is served (test_engine_serves_a_real_completion).


def test_engine_rejects_a_request_without_the_key(converged):
    request = urllib.request.Request(f"http://{NODE1.mgmt_ip}:8000/v1/models")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=30)
    assert err.value.code == 401


def net_bytes(node) -> dict[str, int]:
    """rx + tx bytes of each of the node's interfaces."""
    out = sh(node, "for i in /sys/class/net/eth*; do echo ${i##*/} $(( $(cat $i/statistics/rx_bytes) "
                   "+ $(cat $i/statistics/tx_bytes) )); done")
    return {line.split()[0]: int(line.split()[1]) for line in out.splitlines()}


def test_the_ranks_talk_over_the_fabric_not_the_management_network(converged):
    """During a completion of 64 tokens, lab-2 (whose rank has no API: all its traffic is the
    ranks') moves its bytes on the fabric netdev; the management one carries our SSH only."""
    fabric = SPEC.fabric.netdev
    before = net_bytes(NODE2)
    request = urllib.request.Request(
        f"http://{NODE1.mgmt_ip}:8000/v1/completions",
        data=json.dumps({"model": "tiny-llama", "prompt": "hello", "max_tokens": 64, "ignore_eos": True,
                         "temperature": 0}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {converged['api_key']}"})
    with urllib.request.urlopen(request, timeout=300) as reply:
        tokens = json.load(reply)["usage"]["completion_tokens"]
    after = net_bytes(NODE2)
    delta = {i: after[i] - before[i] for i in after}
    mgmt = next(i for i in delta if i != fabric)
    print(f"lab-2 during {tokens} tokens: {delta[fabric]} bytes on {fabric} (fabric, "
          f"{delta[fabric] / tokens:.0f}/token), {delta[mgmt]} on {mgmt} (management)")
    assert tokens == 64
    assert delta[fabric] > 64 * 1000 and delta[fabric] > 10 * delta[mgmt], delta


def test_second_up_changes_nothing(converged):
    stamps = {(n.name, u): unit_prop(n, u, "ActiveEnterTimestamp") for n, units in UNITS.items() for u in units}
    containers = {n.name: container_ids(n) for n in (NODE1, NODE2)}
    preview = pulumi("preview", "--json")
    assert changes(json.loads(preview.stdout)) == []
    up = pulumi("up", "--yes", "--skip-preview")
    assert up.returncode == 0
    assert {(n.name, u): unit_prop(n, u, "ActiveEnterTimestamp") for n, units in UNITS.items() for u in units} == stamps
    assert {n.name: container_ids(n) for n in (NODE1, NODE2)} == containers


def drift_items(items: list[dict]) -> list[tuple[str, str, str]]:
    return [(i["id"], i["node"], i["reason"]) for i in items]


def up_ok() -> None:
    up = pulumi("up", "--yes", "--skip-preview")
    assert up.returncode == 0, up.stdout[-6000:] + up.stderr[-3000:]


def test_converged_lab_has_an_empty_todo_list(converged):
    assert todo_list() == []


def test_engine_stopped_by_hand_is_one_item_and_up_restarts_it(converged):
    sh(NODE1, f"systemctl stop {ENGINE}")
    items = drift_items(todo_list())
    # The unit, and the health gate that checks what it serves (again after the start the unit's
    # step will do, whose InvocationID is its trigger): nothing else.
    assert items == [("tiny-lab-1-install", "lab-1", "drift: observed inactive"),
                     ("tiny-health", "lab-1", "update: takes an earlier step's output; "
                                              "drift: http://127.0.0.1:8000/health not answering")]
    up_ok()
    assert unit_prop(NODE1, ENGINE, "ActiveState") == "active"
    assert todo_list() == []


def test_glm_brought_back_by_hand_is_retired_again(converged):
    """The operator enables and starts glm again (as a reboot would with it enabled). It cannot
    bind the engine's port, so it ends failed, but enabled: retiring it is pending again."""
    sh(NODE1, f"systemctl enable --now {lab.GLM_UNIT} || true")
    items = drift_items(todo_list())
    assert [(i, n) for i, n, _ in items] == [("lab-1-glm-retire", "lab-1")]
    assert items[0][2].startswith(f"drift: {lab.GLM_UNIT} observed "), items
    # Fixed in place: the retire script again, never its delete script (a restore would start glm
    # first, and on a Spark take the memory of the running engine).
    preview = pulumi("preview", "--json")
    assert preview.returncode == 0, preview.stderr[-3000:]
    assert changes(json.loads(preview.stdout)) == [("update", "lab-1-glm-retire")]
    up_ok()
    assert sh(NODE1, f"systemctl is-enabled {lab.GLM_UNIT} || true") == "disabled"
    assert sh(NODE1, f"systemctl is-active {lab.GLM_UNIT} || true") != "active"
    assert unit_prop(NODE1, ENGINE, "ActiveState") == "active"
    # The original state is still the one destroy gives back (checked by the destroy test).
    assert "active=active" in sh(NODE1, f"cat /var/lib/blackwell-serving/retired/{lab.GLM_UNIT}.state")
    assert todo_list() == []


def test_model_cache_deleted_on_node2_is_copied_again_and_its_engines_restart(converged):
    """The engines that read the cache restart after the copy: tiny (both ranks: one engine) and
    tiny-b (the same model entry, its engine on lab-2), and the todo says so; tiny-gguf, which
    serves another model, is left alone."""
    readers = {(NODE1, ENGINE), (NODE2, ENGINE), (NODE2, names.engine_unit(TINY_B.name))}
    pids = {(n, u): unit_prop(n, u, "MainPID") for n, u in readers}
    other = unit_prop(NODE1, names.engine_unit(GGUF.name), "MainPID")
    sh(NODE2, f"rm -rf {LAB_MODEL_DIR}")
    items = {i["id"]: i for i in todo_list()}
    copy = items.pop("tiny-to-lab-2")
    assert (copy["node"], copy["reason"]) == ("lab-1", "drift: model cache absent or incomplete on lab-2"), copy
    assert "then the engines reading it there restart" in copy["content"], copy
    for unit_step in ("tiny-lab-1-install", "tiny-lab-2-install", "tiny-b-lab-2-install"):
        assert items.pop(unit_step)["reason"] == "update: takes an earlier step's output", unit_step
    # What checks the restarted engines comes after them; nothing of tiny-gguf.
    assert {"tiny-health", "tiny-b-health"} <= set(items), items
    assert not any(i.startswith("tiny-gguf") for i in items), items
    up_ok()
    sh(NODE2, f"cd {LAB_MODEL_DIR} && sha256sum -c --quiet .blackwell-manifest.sha256")
    assert all(unit_prop(n, u, "MainPID") != pid for (n, u), pid in pids.items()), pids
    assert unit_prop(NODE1, names.engine_unit(GGUF.name), "MainPID") == other
    assert todo_list() == []


def test_unreachable_node_is_pending_in_the_list_and_up_changes_nothing(converged):
    """sshd of node 2 stopped (from the host): its steps, and node 1's copies to it, are pending
    and marked unreachable; `up` stops before any step, on either node."""
    stamps = {u: unit_prop(NODE1, u, "ActiveEnterTimestamp") for u in UNITS[NODE1]}
    glm = sh(NODE1, f"systemctl is-active {lab.GLM_UNIT} || true")
    subprocess.run(["docker", "exec", NODE2.name, "systemctl", "stop", "ssh.service"], check=True, timeout=60)
    try:
        items = todo_list()
        unreachable = {i["id"] for i in items if "unreachable: " in i["reason"]}
        # Besides them, only what on lab-1 takes an output of a step on lab-2: tiny's gate (its
        # triggers are the starts lab-2's steps would do) and tiny's rank on lab-1 (a trigger is
        # where the copy to lab-2 leaves the cache: a copy made again restarts both ranks).
        fed = {i["id"] for i in items if i["reason"] == "update: takes an earlier step's output"}
        assert unreachable | fed == {i["id"] for i in items}, items
        assert fed <= {"tiny-health", "tiny-lab-1-install"}, items
        assert {"lab-2-embeddings-check", "lab-2-fabric-check", "tiny-lab-2-install",
                "vllm-lab-sync-lab-2", "tiny-to-lab-2"} <= unreachable
        # tiny's rank on lab-1 only waits for that output: nothing on lab-1 says it drifted.
        assert {i["id"] for i in items if i["id"].startswith("tiny-lab-1")} <= fed, items
        up = pulumi("up", "--yes", "--skip-preview")
        out = up.stdout + up.stderr
        assert up.returncode != 0
        assert "cannot observe lab-2" in out and "Nothing was changed on any node" in out, out[-3000:]
    finally:
        subprocess.run(["docker", "exec", NODE2.name, "systemctl", "start", "ssh.service"], check=True, timeout=60)
    assert {u: unit_prop(NODE1, u, "ActiveEnterTimestamp") for u in UNITS[NODE1]} == stamps
    assert sh(NODE1, f"systemctl is-active {lab.GLM_UNIT} || true") == glm
    assert todo_list() == []


def engine_answers(node=NODE1, deployment_name: str = "tiny", model: str = "tiny-llama", port: int = 8000) -> bool:
    """A real chat completion from a deployment's engine, asked on its head (the key from its
    root-only file); by default tiny's, on lab-1."""
    run = subprocess.run(node.ssh_argv(
        f"key=$(sed -n 's/^VLLM_API_KEY=//p' /etc/blackwell-serving/{deployment_name}.env); "
        "curl -fsS --max-time 20 -H \"Authorization: Bearer $key\" -H 'Content-Type: application/json' "
        f"--data '{{\"model\": \"{model}\", \"max_tokens\": 4, \"messages\": [{{\"role\": \"user\", \"content\": \"Hi\"}}]}}' "
        f"http://127.0.0.1:{port}/v1/chat/completions"), capture_output=True, text=True, timeout=60)
    return run.returncode == 0 and '"choices"' in run.stdout


# The lab engine's start (CPU vLLM, the tiny model) takes about a minute; bounds leave room for a
# loaded machine.
ENGINE_START_S = 240
# lab-2's rank watch (tiny's watchdog settings: 2 checks 10 s apart) noticing a head restarted alone.
RANK_WATCH_S = 3 * 10


def test_a_killed_engine_container_serves_again_by_itself(converged):
    sh(NODE1, f"docker kill {CONTAINER}")
    # systemd's restart policy: RestartSec (10 s), then the engine's start; lab-2's rank, which
    # does not notice, is restarted by its rank watch (2 checks 10 s apart) and meets the new head.
    took = wait_until(engine_answers, 10 + RANK_WATCH_S + ENGINE_START_S, "serving again after docker kill")
    print(f"serving again {took:.0f} s after docker kill")
    assert int(unit_prop(NODE1, ENGINE, "NRestarts")) >= 1


def test_a_killed_worker_rank_fails_completions_and_both_ranks_serve_again(converged):
    """lab-2's rank killed: the head's completions fail (tensor parallel: every token needs both
    ranks); the head's rank then exits (status 0: its units restart `always`), lab-2's unit
    restarts, and they meet again."""
    wait_until(engine_answers, ENGINE_START_S, "serving before the kill")
    sh(NODE2, f"docker kill {CONTAINER}")
    start = time.monotonic()
    assert not engine_answers()
    wait_until(engine_answers, 2 * (10 + ENGINE_START_S), "serving again after lab-2's rank was killed")
    print(f"serving again {time.monotonic() - start:.0f} s after lab-2's rank was killed")
    assert int(unit_prop(NODE2, ENGINE, "NRestarts")) >= 1
    assert fabric_links(NODE2, NODE1) > 0


def test_a_wedged_engine_is_restarted_by_the_watchdog(converged):
    """Every process of the engine's container stopped (SIGSTOP): alive, answering nothing.
    systemd sees nothing wrong; the watchdog (lab: every 10 s, 2 failures) restarts it."""
    # Until this start of the engine has answered the watchdog once, it is loading (the grace).
    run_before = unit_prop(NODE1, ENGINE, "InvocationID")
    wait_until(lambda: sh(NODE1, f"cat {watchdog_state(TINY.name, 'answered')} || true") == run_before,
               60, "the watchdog's first answer from this start of the engine")
    since = {n: node_now(n) for n in (NODE1, NODE2)}
    sh(NODE1, f"for p in $(docker top {CONTAINER} -eo pid | tail -n +2); do kill -STOP \"$p\"; done")
    # 2 checks 10 s apart, each waiting 10 s; docker stop's 30 s before it kills the frozen
    # processes; then the start.
    took = wait_until(lambda: unit_prop(NODE1, ENGINE, "InvocationID") != run_before and engine_answers(),
                      2 * (10 + 10) + 30 + RANK_WATCH_S + ENGINE_START_S, "serving again after SIGSTOP")
    print(f"serving again {took:.0f} s after SIGSTOP")
    journal = journal_since(NODE1, names.watchdog_units(TINY.name)[0], since[NODE1])
    assert "no completion (2 of 2 in a row)" in journal and "restarting" in journal, journal[-2000:]
    # lab-2's rank lost its head and was restarted by its watch to meet the new one.
    journal = journal_since(NODE2, names.rank_watch_units(TINY.name, 1)[0], since[NODE2])
    assert f"restarting {ENGINE} to meet the head again" in journal, journal[-2000:]


def test_restarted_nodes_serve_again_with_glm_still_retired(converged):
    """Both node containers stopped (systemd shuts down) and started as the lab starts them: our
    units come back by themselves in order and serve without an `up`; glm stays stopped and
    disabled; embeddings runs."""
    subprocess.run(["docker", "stop", NODE1.name, NODE2.name], check=True, timeout=180, capture_output=True)
    lab_up = subprocess.run(["bash", str(REPO / "tests" / "lab" / "lab"), "up"], capture_output=True, text=True,
                            timeout=900)
    assert lab_up.returncode == 0, lab_up.stderr[-3000:]
    took = wait_until(engine_answers, ENGINE_START_S + 120, "serving again after the nodes restarted")
    print(f"serving again {took:.0f} s after the nodes were up")
    assert sh(NODE1, f"systemctl is-enabled {lab.GLM_UNIT} || true") == "disabled"
    assert sh(NODE1, f"systemctl is-active {lab.GLM_UNIT} || true") != "active"
    assert unit_prop(NODE2, lab.EMBEDDINGS_UNIT, "ActiveState") == "active"
    wait_until(lambda: unit_prop(NODE2, ENGINE, "ActiveState") == "active", 120,
               "lab-2's rank")
    # tiny-b comes back on its own clock (its Ray head first, then its engine on lab-2).
    wait_until(lambda: engine_answers(NODE2, "tiny-b", "tiny-llama-b", 8002), ENGINE_START_S + 120,
               "tiny-b serving again after the nodes restarted")
    assert todo_list() == []


def test_a_module_move_changes_nothing_in_the_plan(converged, tmp_path_factory):
    """The state written by this program previews with no change from a program whose classes
    moved (type tokens are constants; no Python code is kept in the state)."""
    moved = project_with_a_module_moved(tmp_path_factory.mktemp("release"))
    preview = pulumi("preview", "--json", cwd=moved)
    assert preview.returncode == 0, preview.stderr[-3000:]
    assert changes(json.loads(preview.stdout)) == []


@pytest.mark.ends_the_lab
def test_destroy_gives_the_nodes_back(converged, tmp_path_factory):
    """Run from the program with a module moved: what the state recorded is enough to undo."""
    pid = unit_prop(NODE2, lab.EMBEDDINGS_UNIT, "MainPID")
    moved = project_with_a_module_moved(tmp_path_factory.mktemp("release"))
    down = pulumi("destroy", "--yes", "--skip-preview", cwd=moved)
    assert down.returncode == 0, down.stdout[-3000:]
    for node in (NODE1, NODE2):
        # No unit file and no container of ours, whatever its name: a list, not the names we expect.
        assert ours_left(node) == {"unit files": [], "containers": []}, node.name
        want = EXPECT[stack_name(node)]
        # Our derived images, every tag of them (an image that adds no layer is its base image:
        # the operator's, kept).
        for image in SPEC.images:
            tag = image_tag(image)
            if tag in want.images and tag != image.base:
                assert sh(node, f"docker images -q {tag.rpartition(':')[0]}") == "", (node.name, tag)
        for cache in want.caches:
            assert sh(node, f"test -e {cache} && echo present || echo gone") == "gone", (node.name, cache)
    assert sh(NODE1, f"systemctl is-active {lab.GLM_UNIT} || true") == "active"
    assert sh(NODE1, f"systemctl is-enabled {lab.GLM_UNIT} || true") == "enabled"
    assert unit_prop(NODE2, lab.EMBEDDINGS_UNIT, "MainPID") == pid
