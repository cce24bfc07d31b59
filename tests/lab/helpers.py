"""What the lab tests do on the nodes and with the engine: a command over SSH, a unit's
property, our containers, and `pulumi` on the operator's `lab` stack. What the tests look for on
the nodes (units, containers, images, caches, the fabric netdev) comes from the lab stack file
through the program's own names (components/names.py), never written out by hand: a stack change
cannot leave a test checking an old shape, nor a misspelled name pass a check of absence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import yaml

from bench.expectations import node_expectations
from components import names
from components.config.load import load_stack_file
from components.config.schema import DeploymentSpec, ImageSpec, ModelSpec
from components.monitoring.promapi import Prometheus, PrometheusError
from components.resources.model import cache_paths
from tests.lab import topology as lab

REPO = lab.REPO_ROOT
STACK = "lab"
LAB_CONFIG = REPO / "stacks" / "Pulumi.lab.yaml"
# The lab stack as the program reads it, and what it puts on each of its nodes (bench/expectations.py:
# through config/crosscheck.generated_names, the list the config checks clashes on).
SPEC = load_stack_file(LAB_CONFIG)
EXPECT = node_expectations(SPEC)


def _named(entries, name: str, what: str):
    """The lab stack's one entry named `name`: a name the stack does not have fails here, loudly."""
    found = [e for e in entries if e.name == name]
    assert len(found) == 1, f"{LAB_CONFIG}: no single {what} named {name!r}"
    return found[0]


def deployment(name: str) -> DeploymentSpec:
    return _named(SPEC.deployments, name, "deployment")


def image_of(d: DeploymentSpec) -> ImageSpec:
    return _named(SPEC.images, d.image, "image")


def model_of(d: DeploymentSpec) -> ModelSpec:
    return _named(SPEC.models, d.model, "model")


def stack_name(node: lab.Node) -> str:
    """The stack's name of a lab node (lab-1 for bws-lab-1, and for bws-lab-3 on pair 2): its place
    in this run's pair (on_this_pair)."""
    return SPEC.nodes[lab.nodes(len(SPEC.nodes)).index(node)].name


def our_units(node: lab.Node) -> list[str]:
    """Our units on a lab node: the services, and the timers of the oneshot checks (watchdogs, rank
    watches), whose services are inactive between runs."""
    return EXPECT[stack_name(node)].active_units


def watchdog_state(deployment_name: str, what: str) -> str:
    """A file of the watchdog's state on the node (templates/scripts/watchdog.sh.j2): `answered`
    (the start that answered), `skipped` (the stop it was told about)."""
    return f"{names.WATCHDOG_RUN_DIR}/{deployment_name}.{what}"


def sh(node: lab.Node, command: str, check: bool = True) -> str:
    run = subprocess.run(node.ssh_argv(command), capture_output=True, text=True, timeout=120)
    if check and run.returncode != 0:
        raise AssertionError(f"{node.name}: {command!r} failed: {run.stderr}")
    return run.stdout.strip()


def docker(*args: str, timeout: int = 120, check: bool = True) -> subprocess.CompletedProcess:
    """The host's `docker` (the lab's daemon); a failure, when checked, fails with its words."""
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args[:3])}: {done.stderr[-2000:]}")
    return done


def minbase_image() -> str:
    """The lab's debootstrap minbase (tests/lab/engine/prepare.sh builds it for the lab images): a
    bare Debian machine for the tests' operator containers."""
    tags = docker("images", "bws-lab/bookworm-minbase", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    if not tags:
        pytest.fail("no bws-lab/bookworm-minbase image; fix: tests/lab/lab up (its engine step builds it)")
    return tags[0]


def pulumi(*args: str, timeout: int = 2400, stack: str = STACK, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(["pulumi", *args, "--stack", stack, "--non-interactive"], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=lab.pulumi_env())


def converge_lab_stack() -> None:
    """The operator's `lab` stack selected (created when new) and converged: a no-op `up` when it
    already is."""
    select = subprocess.run(["pulumi", "stack", "select", "--create", STACK, "--non-interactive"],
                            cwd=REPO, capture_output=True, text=True, env=lab.pulumi_env())
    assert select.returncode == 0, select.stderr
    up = pulumi("up", "--yes", "--skip-preview")
    assert up.returncode == 0, up.stdout[-6000:] + up.stderr[-3000:]


def project_with_a_module_moved(tmp_path):
    """A copy of the program in which components/resources/services.py has moved to another module (the
    kind of refactoring an operator's next release brings), on the same backend and stack: the
    state contract says their state must not notice."""
    import shutil
    copy = tmp_path / "moved"
    copy.mkdir()
    for name in ("Pulumi.yaml", "__main__.py", "components", "templates", "stacks"):
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, copy / name)
    resources = copy / "components" / "resources"
    (resources / "services.py").rename(resources / "foreign_units.py")
    stack_py = copy / "components" / "serving" / "stack.py"   # the composition root imports it
    stack_py.write_text(stack_py.read_text().replace("from components.resources.services import",
                                                     "from components.resources.foreign_units import"))
    (copy / ".venv").symlink_to(REPO / ".venv")
    (copy / "tests").symlink_to(REPO / "tests")
    return copy


def api_key() -> str:
    """The lab stack's API key (a secret file the main job makes; made here when absent)."""
    key = lab.STATE_DIR / "api-key"
    if not key.exists():
        key.write_text(os.urandom(18).hex() + "\n")
        key.chmod(0o600)
    return key.read_text().strip()


# Where the lab stack's model is cached on each node.
LAB_MODEL_DIR = cache_paths(model_of(deployment("tiny")))[0]


def completion(served: str = "tiny-llama", port: int = 8000) -> dict:
    """A real chat completion from an engine on lab-1, asked on the node (the key from its file)."""
    key = api_key()
    body = json.dumps({"model": served, "max_tokens": 4, "temperature": 0,
                       "messages": [{"role": "user", "content": "Say hello."}]})
    out = sh(lab.nodes(1)[0], f"curl -fsS --max-time 60 -H 'Authorization: Bearer {key}' "
                              f"-H 'Content-Type: application/json' "
                              f"--data-binary '{body}' http://127.0.0.1:{port}/v1/chat/completions")
    return json.loads(out)


def unit_prop(node, unit, prop) -> str:
    return sh(node, f"systemctl show -p {prop} --value {unit}")


def node_now(node: lab.Node) -> str:
    """The node's clock, in seconds since the epoch: taken before a fault, the start of what
    journal_since reads."""
    return sh(node, "date +%s")


def journal_since(node: lab.Node, unit: str, since: str) -> str:
    """What `unit` wrote to the node's journal from `since` (node_now before the fault) on: this
    run's lines, not those an earlier test left (the lab's journals outlive every test)."""
    return sh(node, f"journalctl -u {unit} --since @{since} --no-pager -o cat")


def container_ids(node) -> str:
    """Our containers on the node, in any state (`-a`: one that exited is still left); sorted here,
    as `| sort` on the node would hide a failed `docker ps`."""
    return "\n".join(sorted(sh(node, f"docker ps -aq --no-trunc --filter name={names.PREFIX}").split()))


def ours_left(node: lab.Node) -> dict[str, list[str]]:
    """Every unit file and container (in any state) under our prefix on the node: both empty once
    the nodes are given back. A list of what is there, so that no name spelled wrong can pass it
    (as a LoadState of `not-found` would)."""
    command = f"systemctl list-unit-files --no-legend --no-pager '{names.PREFIX}*'"
    run = subprocess.run(node.ssh_argv(command), capture_output=True, text=True, timeout=120)
    # systemctl exits 1 when no unit file matches (and prints nothing); any other failure is one.
    if run.returncode not in (0, 1) or (run.returncode == 1 and (run.stdout.strip() or run.stderr.strip())):
        raise AssertionError(f"{node.name}: {command!r} exited {run.returncode}: {run.stderr}")
    containers = sh(node, f"docker ps -a --filter name={names.PREFIX} --format '{{{{.Names}}}}'")
    return {"unit files": [line.split()[0] for line in run.stdout.splitlines() if line.strip()],
            "containers": sorted(containers.split())}


def changes(preview: dict) -> list[tuple[str, str]]:
    return [(s["op"], s["urn"].split("::")[-1]) for s in preview.get("steps", []) if s["op"] != "same"]


def node_state(node: lab.Node, attempts: int = 3) -> str:
    """systemd's state on the node, or "unreachable: <ssh's last words>" after `attempts` tries
    2 s apart (one refused connection on a loaded machine is not a lab that is down)."""
    for attempt in range(attempts):
        run = subprocess.run(node.ssh_argv("systemctl is-system-running || true"), capture_output=True,
                             text=True, timeout=30)
        if run.returncode == 0:
            return run.stdout.strip()
        if attempt + 1 < attempts:
            time.sleep(2)
    return "unreachable: " + (run.stderr.strip().splitlines() or ["(ssh said nothing)"])[-1]


def check_lab(*nodes: lab.Node) -> tuple[bool, str]:
    """`tests/lab/lab check`: these nodes answer SSH (only these: another pair's may be down on
    purpose); one that does not is shown from the host (its container's life, port 22's listener,
    sshd's log, the kernel's OOM lines) and brought back. (whether all answer now, what it said)."""
    done = subprocess.run([str(lab.LAB_DIR / "lab"), "check", *(str(n.index) for n in nodes)],
                          capture_output=True, text=True, timeout=900)
    return done.returncode == 0, (done.stdout + done.stderr).strip()


def require_lab(*nodes: lab.Node) -> None:
    """Fail, naming the fix, when the lab is not up: a lab test never passes by skipping
    (`bash scripts/test.sh` starts the lab before it runs them). A node that does not answer SSH
    is shown and brought back by `tests/lab/lab check`: the test goes on with a warning in pytest's
    summary that keeps what the host saw; when it cannot be brought back, the test fails with it."""
    states = {n.name: node_state(n) for n in nodes}
    if any(s.startswith("unreachable") for s in states.values()):
        back, said = check_lab(*nodes)
        if not back:
            pytest.fail(f"the lab's nodes do not answer SSH ({states}); fix: tests/lab/lab up\n{said}")
        warnings.warn(f"the lab's nodes did not answer SSH ({states}) and were brought back:\n{said}")
        states = {n.name: node_state(n) for n in nodes}
    if any(s not in ("running", "degraded") for s in states.values()):
        pytest.fail(f"the lab is not up ({states}); fix: tests/lab/lab up "
                    f"(bash scripts/test.sh starts it before the tests)")


def lab_config_one_engine() -> dict:
    """The lab stack's config with its first deployment only: no second model, no gateway, no
    gateway image and no monitoring (the tests of one engine's life, rollback and preflight, start
    from it; tests/lab/test_lab_monitoring.py adds monitoring back)."""
    c = yaml.safe_load(LAB_CONFIG.read_text())["config"]
    c["blackwell-serving:deployments"] = c["blackwell-serving:deployments"][:1]
    c.pop("blackwell-serving:gateway", None)
    c.pop("blackwell-serving:monitoring", None)
    used = {d["image"] for d in c["blackwell-serving:deployments"]}
    c["blackwell-serving:images"] = [i for i in c["blackwell-serving:images"] if i["name"] in used]
    return c


def one_node(c: dict) -> None:
    """The lab stack with everything on lab-1 (a single-node deployment: no image copy)."""
    m, d, img = c["blackwell-serving:models"][0], c["blackwell-serving:deployments"][0], c["blackwell-serving:images"][0]
    m["nodes"] = img["nodes"] = ["lab-1"]
    d.update(nodes=["lab-1"], topology="single", tensor_parallel=1, health={"timeout_s": 600})
    d.pop("executor", None)
    c.pop("blackwell-serving:fabric", None)


def base_image_only(c: dict) -> None:
    """The engine image without its upgrade layer: the base image itself, only pulled. For the
    one-engine stacks whose tests are not about the image: a destroy removes the derived image, so
    each of them would build it again (about a minute, pip over the network) for nothing."""
    image = c["blackwell-serving:images"][0]
    image.pop("transformers", None)
    image.pop("pip", None)
    image.pop("pip_ca_bundle", None)


def on_this_pair(c: dict) -> None:
    """The stack's nodes on this run's pair (tests/lab/topology.py): the same names (lab-1, lab-2),
    the pair's addresses and pinned host keys. On pair 1, the lab stack file's own nodes, it
    changes nothing (and leaves a stack of other nodes, such as discovery's, as it is)."""
    if lab.pair() == 1:
        return
    for entry, node in zip(c["blackwell-serving:nodes"], lab.nodes(len(c["blackwell-serving:nodes"]))):
        entry.update(host=node.mgmt_ip, fabric_address=node.fabric_ip)
        entry["ssh"]["host_key"] = node.host_public_key


def destroy_lab_stack() -> None:
    """Start from a lab where nothing of ours is deployed (glm running), as an operator finds it:
    the operator's `lab` stack destroyed (a no-op when it already is). It lives on pair 1 only:
    on another pair there is nothing of it to destroy, and pair 1's tests are using it."""
    if lab.pair() != 1:
        return
    select = subprocess.run(["pulumi", "stack", "select", "--create", STACK, "--non-interactive"],
                            cwd=REPO, capture_output=True, text=True, env=lab.pulumi_env())
    assert select.returncode == 0, select.stderr
    down = pulumi("destroy", "--yes", "--skip-preview")
    assert down.returncode == 0, down.stdout[-3000:]


class Stack:
    """The lab stack's config (its first deployment, lab_config_one_engine, unless `config` is
    given) under another name, in a project copy with its own backend."""

    def __init__(self, tmp_path: Path, name: str, change, config: dict | None = None) -> None:
        from tests.engine.conftest import copy_project
        self.project = copy_project(tmp_path)
        self.name = name
        self.env = {**lab.pulumi_env(), "PULUMI_BACKEND_URL": f"file://{tmp_path / 'backend'}"}
        self.config = lab_config_one_engine() if config is None else config
        on_this_pair(self.config)
        self.change(change)
        init = self.run("stack", "init", name)
        assert init.returncode == 0, init.stderr

    def change(self, change) -> None:
        """Edit the stack file as an operator would: `change` gets the config mapping."""
        change(self.config)
        (self.project / "stacks" / f"Pulumi.{self.name}.yaml").write_text(yaml.safe_dump({"config": self.config}))

    def run(self, *args: str, timeout: int = 1800) -> subprocess.CompletedProcess:
        stack = [] if args[:2] == ("stack", "init") else ["--stack", self.name]
        return subprocess.run(["pulumi", *args, *stack, "--non-interactive"], cwd=self.project,
                              capture_output=True, text=True, timeout=timeout, env=self.env)

    def todo(self) -> str:
        """The todo list of this stack in text, as `python -m components.todo` prints it."""
        done = subprocess.run([sys.executable, "-m", "components.todo", "--stack", self.name,
                               "--work-dir", str(self.project)], cwd=REPO, capture_output=True, text=True,
                              timeout=900, env=self.env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    def destroy(self) -> None:
        down = self.run("destroy", "--yes", "--skip-preview")
        assert down.returncode == 0, down.stdout[-3000:] + down.stderr[-2000:]


def nodes_as_found() -> dict:
    """What the tests check is as an operator found it: glm, the embeddings server's process,
    our units and containers on both nodes."""
    NODE1, NODE2 = lab.nodes(2)
    return {"glm": (sh(NODE1, f"systemctl is-active {lab.GLM_UNIT} || true"),
                    sh(NODE1, f"systemctl is-enabled {lab.GLM_UNIT} || true")),
            "embeddings_pid": unit_prop(NODE2, lab.EMBEDDINGS_UNIT, "MainPID"),
            "our_units": {n.name: sh(n, f"systemctl list-units --all --plain --no-legend '{names.PREFIX}*' | wc -l")
                          for n in (NODE1, NODE2)},
            "our_containers": {n.name: container_ids(n) for n in (NODE1, NODE2)}}


def todo_list() -> list[dict]:
    """The todo command's list for the lab, as the operator runs it (`--format json-full`: the
    items with their node and reason), from one observation of the nodes; its items in the seeds'
    shape (the keys todo.schema.json allows) are checked against that schema. One run, not one per
    format: two runs observe the nodes twice, and a node in the middle of a restart (a rank whose
    head was stopped) may show differently to each (found in a cold run: their lists differed).
    That the `json` format is this projection is tests/unit/todo's to check."""
    import jsonschema

    done = subprocess.run([sys.executable, "-m", "components.todo", "--stack", STACK, "--format", "json-full"],
                          cwd=REPO, capture_output=True, text=True, timeout=600, env=lab.pulumi_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    full = json.loads(done.stdout)
    schema = json.loads((REPO / "components" / "todo" / "todo.schema.json").read_text())
    keys = set(schema["items"]["properties"])
    jsonschema.validate([{k: v for k, v in item.items() if k in keys} for item in full], schema)
    return full


def prometheus_answers(prom: Prometheus, expr: str) -> list:
    """The samples of `expr` now; none while Prometheus cannot answer (still starting)."""
    try:
        return prom.query(expr, time.time())
    except PrometheusError:
        return []


def unhealthy_targets(prom: Prometheus, count: int) -> list[str]:
    """What keeps Prometheus's targets from being `count`, all up: each one not up with its error,
    a wrong count with the targets' labels, or why Prometheus did not answer. Empty: all up."""
    try:
        targets = prom.targets()
    except PrometheusError as err:
        return [str(err)]
    return [f"{t.labels.get('job')} {t.labels.get('node')}: {t.health} {t.error}" for t in targets
            if t.health != "up"] or ([] if len(targets) == count else [f"{len(targets)} targets: {[t.labels for t in targets]}"])
