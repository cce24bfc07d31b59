"""What the lab tests do on the nodes and with the engine: a command over SSH, a unit's
property, our containers, and `pulumi` on the operator's `lab` stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.lab import topology as lab

REPO = lab.REPO_ROOT
STACK = "lab"
LAB_CONFIG = REPO / "stacks" / "Pulumi.lab.yaml"


def sh(node: lab.Node, command: str, check: bool = True) -> str:
    run = subprocess.run(node.ssh_argv(command), capture_output=True, text=True, timeout=120)
    if check and run.returncode != 0:
        raise AssertionError(f"{node.name}: {command!r} failed: {run.stderr}")
    return run.stdout.strip()


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
    stack_py = resources / "stack.py"
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
LAB_MODEL_DIR = "/var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1"


def completion(served: str = "tiny-llama", port: int = 8000) -> dict:
    """A real chat completion from an engine on lab-1, asked on the node (the key from its file)."""
    key = api_key()
    body = json.dumps({"model": served, "max_tokens": 4, "temperature": 0,
                       "messages": [{"role": "user", "content": "Say hello."}]})
    out = sh(lab.nodes(1)[0], f"curl -fsS --max-time 60 -H 'Authorization: Bearer {key}' "
                              f"-H 'Content-Type: application/json' "
                              f"--data-binary '{body}' http://127.0.0.1:{port}/v1/chat/completions")
    return json.loads(out)


def wait_until(check, timeout_s: float, what: str) -> float:
    """Seconds until check() held; fails after timeout_s."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout_s:
            raise AssertionError(f"{what}: not within {timeout_s} s")
        time.sleep(2)
    return time.monotonic() - start


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


def require_lab(*nodes: lab.Node) -> None:
    """Fail, naming the fix, when the lab is not up: a lab test never passes by skipping
    (`bash scripts/test.sh` starts the lab before it runs them)."""
    states = {n.name: node_state(n) for n in nodes}
    if any(s not in ("running", "degraded") for s in states.values()):
        pytest.fail(f"the lab is not up ({states}); fix: tests/lab/lab up "
                    f"(bash scripts/test.sh starts it before the tests)")


def lab_config_one_engine() -> dict:
    """The lab stack's config with its first deployment only: no second model, no gateway and no
    gateway image (the tests of one engine's life, rollback and preflight, start from it)."""
    c = yaml.safe_load(LAB_CONFIG.read_text())["config"]
    c["blackwell-serving:deployments"] = c["blackwell-serving:deployments"][:1]
    c.pop("blackwell-serving:gateway", None)
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


def destroy_lab_stack() -> None:
    """Start from a lab where nothing of ours is deployed (glm running), as an operator finds it:
    the operator's `lab` stack destroyed (a no-op when it already is)."""
    select = subprocess.run(["pulumi", "stack", "select", "--create", STACK, "--non-interactive"],
                            cwd=REPO, capture_output=True, text=True, env=lab.pulumi_env())
    assert select.returncode == 0, select.stderr
    down = pulumi("destroy", "--yes", "--skip-preview")
    assert down.returncode == 0, down.stdout[-3000:]


class Stack:
    """The lab stack's config (its first deployment, lab_config_one_engine) under another name, in
    a project copy with its own backend."""

    def __init__(self, tmp_path: Path, name: str, change) -> None:
        from tests.engine.conftest import copy_project
        self.project = copy_project(tmp_path)
        self.name = name
        self.env = {**lab.pulumi_env(), "PULUMI_BACKEND_URL": f"file://{tmp_path / 'backend'}"}
        self.config = lab_config_one_engine()
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
            "our_units": {n.name: sh(n, "systemctl list-units --all --plain --no-legend 'bws-*' | wc -l")
                          for n in (NODE1, NODE2)},
            "our_containers": {n.name: container_ids(n) for n in (NODE1, NODE2)}}
