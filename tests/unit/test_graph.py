"""Tier 1: each stack's component graph under Pulumi mocks — parents and names, the order of the
work (dependencies), the node each command runs on, the engine command lines, and secrets kept
out of every script and argv."""

from __future__ import annotations

import re

import pytest

from tests.unit import systemd_syntax
from tests.unit.mocked import COMMAND, SENTINEL, STACKS, STEP_TYPES, plain, script_of, snapshot

_CACHE: dict = {}


def snap(stack: str):
    if stack not in _CACHE:
        _CACHE[stack] = snapshot(stack)
    return _CACHE[stack]


def urn_type_name(urn: str) -> tuple[str, str]:
    """(type, name) of a URN: urn:pulumi:<stack>::<project>::<parent$…$type>::<name>."""
    parts = urn.split("::")
    return parts[2].split("$")[-1], "::".join(parts[3:])


def parent_of(s, r):
    if not r.parent:
        return None
    typ, name = urn_type_name(r.parent)
    return s.recorder.resources.get(f"{typ}::{name}")


def dep_names(r) -> set[str]:
    return {urn_type_name(d)[1] for d in r.depends_on}


def closure(s, name: str) -> set[str]:
    """Every resource `name` waits for, directly or through the resources it waits for."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        for d in dep_names(s.by_name(todo.pop())):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def step_inputs(r) -> str:
    """The values of a step's triggers, which its command line names (BWS_INPUTS=…)."""
    line = plain(r.inputs["create"]).split("\n", 1)[0]
    return line.split("BWS_INPUTS=", 1)[1].split(" BWS_", 1)[0] if "BWS_INPUTS=" in line else ""


def host_of(r) -> str:
    conn = r.inputs["connection"]
    conn = conn.get("value", conn)  # the whole connection is a secret (it may carry a key)
    return conn["host"]


def engine_argv(unit_text: str) -> list[str]:
    [start] = systemd_syntax.values(unit_text, "Service", "ExecStart")
    return systemd_syntax.exec_argv(start)


def engine_step(img, node: str) -> str:
    """The step that puts an image entry's engine on `node`: the build on its build node and the
    copies elsewhere (docker), or the venv built on that node (runtime venv)."""
    if img.runtime == "venv":
        return f"{img.name}-venv-{node}"
    return f"{img.name}-build" if node == img.build_node else f"{img.name}-sync-{node}"


def builds(img) -> list[str]:
    """The steps that make an image entry's engine (no copies)."""
    return [engine_step(img, n) for n in img.nodes] if img.runtime == "venv" else [f"{img.name}-build"]


def has_flag(argv: list[str], *flag_and_values: str) -> bool:
    n = len(flag_and_values)
    return any(argv[i:i + n] == list(flag_and_values) for i in range(len(argv) - n + 1))


def flag_value(argv: list[str], flag: str) -> str:
    assert flag in argv, f"{flag} missing from {argv}"
    return argv[argv.index(flag) + 1]


# ---------------------------------------------------------------------------------------------
# Every stack


@pytest.mark.parametrize("stack", STACKS)
def test_type_tokens_are_the_declared_constants(stack):
    """Component type tokens come from components/steps/types.py (blackwell:<module>:<Type>), never from
    where a class lives: moving a class must not change a URN."""
    from components.steps import types
    declared = {v for k, v in vars(types).items() if k.isupper()}
    s = snap(stack)
    components = [r for r in s.recorder.resources.values() if r.type not in STEP_TYPES]
    assert components
    for r in components:
        assert re.fullmatch(r"blackwell:([a-z_]+):([A-Z][A-Za-z]+)", r.type), \
            f"{r.name}: type token {r.type!r} is not blackwell:<module>:<Type>"
        assert r.type in declared, f"{r.name}: type token {r.type!r} is not a constant of components/steps/types.py"


@pytest.mark.parametrize("stack", STACKS)
def test_every_resource_is_parented_and_named_from_its_component(stack):
    s = snap(stack)
    [root] = [r for r in s.recorder.resources.values() if r.type == "blackwell:stack:ServingStack"]
    assert root.name == stack
    for r in s.recorder.resources.values():
        if r is root:
            continue
        parent = parent_of(s, r)
        assert parent is not None, f"{r.type} {r.name} has no parent inside the stack (parent={r.parent!r})"
        assert parent.type.startswith("blackwell:"), f"{r.name}: parent {parent.type} is not one of our components"
        if r.type in STEP_TYPES:
            assert parent is not root, f"command {r.name} hangs off the stack instead of its component"
        if parent is not root:
            assert r.name.startswith(parent.name + "-"), \
                f"{r.type} {r.name} is not named from its component {parent.name}"


@pytest.mark.parametrize("stack", STACKS)
def test_every_command_targets_a_node_of_the_stack_with_its_pinned_host_key(stack):
    s = snap(stack)
    nodes = {n.host: n for n in s.spec.nodes}
    assert s.commands()
    for r in s.commands():
        conn = r.inputs["connection"].get("value", r.inputs["connection"])
        assert conn["host"] in nodes, f"{r.name} targets unknown host {conn['host']}"
        node = nodes[conn["host"]]
        assert conn["hostKey"] == node.ssh.host_key, f"{r.name}: host key not pinned to {node.name}'s"
        assert conn["user"] == node.ssh.user and int(conn["port"]) == node.ssh.port
        # An unreachable node fails the step in well under a minute.
        assert conn["dialErrorLimit"] * conn["perDialTimeout"] <= 30


@pytest.mark.parametrize("stack", STACKS)
def test_every_command_targets_the_node_its_component_is_about(stack):
    """Units, retired and kept services run on their own node; builds and fetches on theirs."""
    s = snap(stack)
    host = {n.name: n.host for n in s.spec.nodes}
    for u in s.units:
        assert host_of(s.by_name(f"{u._name}-install")) == host[u.node.name]
    for ref in [*s.spec.retire, *s.spec.keep]:
        stem = f"{ref.node}-{ref.unit.removesuffix('.service')}"
        cmd = s.by_name(f"{stem}-retire" if ref in s.spec.retire else f"{stem}-check")
        assert host_of(cmd) == host[ref.node]
    for img in s.spec.images:
        for n in (img.nodes if img.runtime == "venv" else [img.build_node]):
            assert host_of(s.by_name(engine_step(img, n))) == host[n]
    for m in s.spec.models:
        assert host_of(s.by_name(f"{m.name}-fetch")) == host[m.fetch_node]
    for d in s.spec.deployments:
        assert host_of(s.by_name(f"{d.name}-health")) == host[d.nodes[0]]


@pytest.mark.parametrize("stack", STACKS)
def test_serving_waits_for_retire_image_model_and_comes_before_its_health_gate(stack):
    s = snap(stack)
    for d in s.spec.deployments:
        engine = [u for u in s.units if u._name.startswith(f"{d.name}-") and u.unit_name == f"bws-{d.name}.service"]
        assert {u.node.name for u in engine} == set(d.nodes if d.topology == "native" else d.nodes[:1])
        retired = {f"{r.node}-{r.unit.removesuffix('.service')}-retire" for r in s.spec.retire if r.node in d.nodes}
        image, model = s.spec.image(d.image), s.spec.model(d.model)
        for u in engine:
            waits = closure(s, f"{u._name}-install")
            assert retired <= waits, f"{u.unit_name} may start before {retired - waits} is stopped"
            assert f"{model.name}-fetch" in waits
            for n in d.nodes:
                assert engine_step(image, n) in waits
                if n != model.fetch_node:
                    assert f"{model.name}-to-{n}" in waits
            assert f"{u._name}-install" in dep_names(s.by_name(f"{d.name}-health"))


@pytest.mark.parametrize("stack", STACKS)
def test_a_start_of_any_other_process_of_the_engine_restarts_its_head_after_it(stack):
    """A repair that restarts one rank or one Ray node breaks the engine's group: the head's unit
    takes each such start (the install step's `started=`) as a trigger, and restarts after it."""
    s = snap(stack)
    for d in s.spec.deployments:
        unit = f"bws-{d.name}.service"
        engine = {u.node.name: u for u in s.units if u._name.startswith(f"{d.name}-") and u.unit_name == unit}
        head = s.by_name(f"{engine[d.nodes[0]]._name}-install")
        if d.topology == "native":
            others = [f"{engine[n]._name}-install" for n in d.nodes[1:]]
        else:
            others = [f"{u._name}-install" for u in s.units if u._name.startswith(f"{d.name}-ray-")]
        assert len(others) == {"native": len(d.nodes) - 1, "ray": len(d.nodes), "single": 0}[d.topology]
        for other in others:
            assert f"start-of-{other}" in step_inputs(head), (head.name, other)
            assert other in closure(s, head.name)
        # A rank past the head never restarts for the head's starts (it meets the new head by itself).
        for n in d.nodes[1:] if d.topology == "native" else []:
            assert "start-of-" not in step_inputs(s.by_name(f"{engine[n]._name}-install"))


@pytest.mark.parametrize("stack", STACKS)
def test_preflight_checks_come_before_any_unit_is_stopped_or_started(stack):
    s = snap(stack)
    checks = {r.name for r in s.commands() if r.name.endswith(("-preflight-engine", "-fabric-check", "-bandwidth-check"))}
    assert {f"{d.name}-preflight-engine" for d in s.spec.deployments} <= checks
    for r in s.spec.retire:
        assert checks <= closure(s, f"{r.node}-{r.unit.removesuffix('.service')}-retire")
    for u in s.units:
        assert checks <= closure(s, f"{u._name}-install"), f"{u.unit_name} may start before the preflight"
    for d in s.spec.deployments:
        probe = closure(s, f"{d.name}-preflight-engine")
        head = d.nodes[0]
        assert engine_step(s.spec.image(d.image), head) in probe
        assert f"{d.model}-fetch" in probe


@pytest.mark.parametrize("stack", STACKS)
def test_image_build_and_model_fetch_run_in_parallel(stack):
    s = snap(stack)
    for img in s.spec.images:
        for m in s.spec.models:
            for build in builds(img):
                assert f"{m.name}-fetch" not in closure(s, build)
                assert build not in closure(s, f"{m.name}-fetch")


@pytest.mark.parametrize("stack", STACKS)
def test_kept_services_are_only_looked_at(stack):
    s = snap(stack)
    for k in s.spec.keep:
        comp = s.by_name(f"{k.node}-{k.unit.removesuffix('.service')}")
        assert comp.type == "blackwell:services:KeptService"
        children = [r for r in s.recorder.resources.values() if parent_of(s, r) is comp]
        assert [c.type for c in children] == [COMMAND]
        [check] = children
        assert not check.inputs.get("delete"), "a kept service must have nothing to do on destroy"
        script = script_of(check)
        assert not check.inputs.get("update"), "the check runs the same script again"
        verbs = re.findall(r"systemctl\s+(\S+)", script)
        assert verbs and set(verbs) <= {"is-active", "is-enabled", "show"}, f"kept-service check does more than look: {verbs}"
        commands = re.sub(r"(?m)^\s*#.*$", "", script.split("\n", 3)[-1])  # comments do nothing
        assert not re.search(r"\b(kill|docker|rm|mv|stop|restart|disable|mask)\b", commands)
        # No other command of the stack names the kept unit at all.
        for r in s.commands():
            if r is not check:
                for key in ("create", "delete"):
                    assert k.unit not in (script_of(r, key) or ""), f"{r.name} touches kept unit {k.unit}"


@pytest.mark.parametrize("stack", STACKS)
def test_secrets_never_reach_a_script_argv_or_unit_in_plain_text(stack):
    s = snap(stack)
    secret_sig = "4dabf18193072939515e22adb298388d"  # pulumi's special signature key

    def plain_occurrences(value, path, found):
        if isinstance(value, dict):
            if value.get(secret_sig):  # a secret: allowed to carry it
                return
            for k, v in value.items():
                plain_occurrences(v, f"{path}.{k}", found)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                plain_occurrences(v, f"{path}[{i}]", found)
        elif isinstance(value, str) and SENTINEL in value:
            found.append(path)

    leaks: list[str] = []
    for r in s.recorder.resources.values():
        for key in ("create", "update", "delete"):
            assert SENTINEL not in str(plain(r.inputs.get(key)) or ""), f"secret in the {key} command of {r.name}"
        if r.type in STEP_TYPES:
            for key in ("create", "delete"):
                assert SENTINEL not in (script_of(r, key) or ""), f"secret in the {key} script of {r.name}"
        plain_occurrences(r.inputs, r.name, leaks)
    assert not leaks, f"secret in plain text at {leaks}"
    for u in s.units:
        assert SENTINEL not in u.unit_text, f"secret in unit {u.unit_name}"

    # The secrets did travel — as secret stdin — so this test can see a leak when there is one.
    carriers = [r for r in s.commands() if SENTINEL in str(r.inputs.get("stdin", ""))]
    secrets = [m for m in s.spec.models if m.hf_token and m.source.kind == "hub"] + \
              [d for d in s.spec.deployments if d.api_key]
    assert bool(carriers) == bool(secrets)
    for r in carriers:
        assert r.inputs["stdin"].get(secret_sig), f"{r.name}: stdin with a secret is not marked secret"


@pytest.mark.parametrize("stack", STACKS)
def test_the_api_key_reaches_the_engine_through_a_mounted_file_not_the_command_line(stack):
    """Not `-e NAME` either: Docker would copy the value into the container's config, where
    `docker inspect` shows it."""
    from components.runtimes.docker import SECRETS_IN_CONTAINER
    from components.engines import ENGINES
    s = snap(stack)
    for d in s.spec.deployments:
        for u in s.units:
            if u.unit_name != f"bws-{d.name}.service":
                continue
            argv = engine_argv(u.unit_text)
            assert "--api-key" not in argv and ENGINES[d.engine].api_key_var not in argv
            if s.spec.image(d.image).runtime == "venv":
                # No container: systemd reads the root-only file into the engine's environment.
                assert systemd_syntax.values(u.unit_text, "Service", "EnvironmentFile") == (
                    [f"/etc/blackwell-serving/{d.name}.env"] if d.api_key else [])
                assert SENTINEL not in u.unit_text and "docker" not in u.unit_text
                continue
            assert not systemd_syntax.values(u.unit_text, "Service", "EnvironmentFile")
            if d.api_key:
                assert has_flag(argv, "--mount", f"type=bind,source=/etc/blackwell-serving/{d.name}.env,"
                                                         f"target={SECRETS_IN_CONTAINER},readonly")
                assert f"< {SECRETS_IN_CONTAINER} && exec \"$@\"" in " ".join(argv)


# ---------------------------------------------------------------------------------------------
# spark-duo: two Sparks, vLLM TP 2 over Ray on the RoCE fabric

DUO = "spark-duo"
HEAD, SECOND = "spark-1a32", "spark-5be3"
DUO_RETIRE = [f"{HEAD}-vllm-cluster-retire", f"{HEAD}-vllm-proxy-retire", f"{HEAD}-vllm-reranker-retire"]


def test_duo_retire_before_ray_head_and_engine():
    s = snap(DUO)
    for unit in (f"qwen35-ray-head-{HEAD}-install", f"qwen35-{HEAD}-install"):
        assert set(DUO_RETIRE) <= dep_names(s.by_name(unit)), unit


def test_duo_ray_worker_after_head():
    s = snap(DUO)
    assert f"qwen35-ray-head-{HEAD}-install" in dep_names(s.by_name(f"qwen35-ray-worker-{SECOND}-install"))
    assert {f"qwen35-ray-head-{HEAD}-install", f"qwen35-ray-worker-{SECOND}-install"} <= \
        dep_names(s.by_name("qwen35-ray-ready"))


def test_duo_engine_after_copies_to_the_secondary_and_ray_ready():
    s = snap(DUO)
    deps = dep_names(s.by_name(f"qwen35-{HEAD}-install"))
    assert {f"vllm-qwen35-sync-{SECOND}", f"qwen35-122b-to-{SECOND}", "qwen35-ray-ready"} <= deps
    # The gate checks the engine, and runs again after any start of it or of the Ray units it is
    # bound to (their `started` outputs are its triggers); the engine's unit includes its env step.
    assert dep_names(s.by_name("qwen35-health")) == {f"qwen35-{HEAD}-install", f"qwen35-{HEAD}-env",
                                                     f"qwen35-ray-head-{HEAD}-install",
                                                     f"qwen35-ray-worker-{SECOND}-install"}
    # The secret environment is written before the unit that reads it, after the same checks.
    assert f"qwen35-{HEAD}-env" in deps
    assert set(DUO_RETIRE) <= dep_names(s.by_name(f"qwen35-{HEAD}-env"))


def test_duo_model_fetch_and_image_build_are_independent():
    s = snap(DUO)
    assert "qwen35-122b-fetch" not in closure(s, "vllm-qwen35-build")
    assert "vllm-qwen35-build" not in closure(s, "qwen35-122b-fetch")
    assert closure(s, "vllm-qwen35-build") == set() and closure(s, "qwen35-122b-fetch") == set()


def test_duo_kept_embeddings_only_checked():
    s = snap(DUO)
    kept = [r for r in s.commands() if "vllm-embeddings" in r.name]
    assert [r.name for r in kept] == [f"{SECOND}-vllm-embeddings-check"]
    assert host_of(kept[0]) == SECOND and "delete" not in kept[0].inputs


def test_duo_commands_target_the_right_node():
    s = snap(DUO)
    expected = {
        **{n: HEAD for n in DUO_RETIRE},
        f"{SECOND}-vllm-embeddings-check": SECOND,
        "vllm-qwen35-build": HEAD,
        f"vllm-qwen35-sync-{SECOND}": HEAD,         # pushed from the build node over the fabric
        f"layer-registry-{HEAD}-start": HEAD,       # the layer registry on the build node's loopback
        f"layer-registry-{HEAD}-vllm-qwen35": HEAD,  # the image's layers kept there, after its copies
        "qwen35-122b-fetch": HEAD,
        f"qwen35-122b-to-{SECOND}": HEAD,
        f"qwen35-ray-head-{HEAD}-install": HEAD,
        f"qwen35-ray-worker-{SECOND}-install": SECOND,
        "qwen35-ray-ready": HEAD,
        f"qwen35-{HEAD}-env": HEAD,                 # the engine's secret EnvironmentFile, beside its unit
        f"qwen35-{HEAD}-install": HEAD,
        "qwen35-health": HEAD,
        "qwen35-watchdog-timer": HEAD,              # the watchdog's timer on the head
        "qwen35-benchmark": HEAD,                   # after the health gate, on the head's loopback
        "qwen35-preflight-engine": HEAD,            # inside the image, where the model is cached
        f"{HEAD}-fabric-check": HEAD,
        f"{SECOND}-fabric-check": SECOND,
        f"{HEAD}-resources-check": HEAD,
        f"{SECOND}-resources-check": SECOND,
        f"{HEAD}-vllm-qwen35-gpus-check": HEAD,     # a container of the image sees the GPU, on each node
        f"{SECOND}-vllm-qwen35-gpus-check": SECOND,
        "qwen35-bandwidth-check": HEAD,             # rank 0 here, rank 1 on the secondary through ssh
        "gateway-build": HEAD,                      # the gateway in place of vllm-proxy, on the head
        "gateway-env": HEAD,                        # the gateway's keys, beside its unit
        "gateway-install": HEAD,
        "gateway-health": HEAD,
        # monitoring: an exporter on each node, Prometheus on the head (its monitoring.node)
        **{f"monitoring-{n}-prometheus-node-exporter-package": n for n in (HEAD, SECOND)},
        **{f"monitoring-{n}-node-exporter-install": n for n in (HEAD, SECOND)},
        **{f"monitoring-{HEAD}-{step}": HEAD for step in ("prometheus-package", "prometheus-keys", "prometheus-config",
                                                          "prometheus-install", "prometheus-ready")},
    }
    assert {r.name: host_of(r) for r in s.commands()} == expected


def test_duo_copies_go_over_the_fabric():
    s = snap(DUO)
    for name in (f"vllm-qwen35-sync-{SECOND}", f"qwen35-122b-to-{SECOND}"):
        script = script_of(s.by_name(name))
        assert "root@192.168.200.13" in script and "spark-5be3 " not in script


def test_duo_vllm_command_line():
    s = snap(DUO)
    [unit] = [u for u in s.units if u.unit_name == "bws-qwen35.service"]
    argv = engine_argv(unit.unit_text)
    assert argv[:3] == ["/usr/bin/docker", "run", "--rm"]
    serve = argv[argv.index("vllm"):]
    assert serve[:2] == ["vllm", "serve"]
    assert has_flag(serve, "--tensor-parallel-size", "2")
    assert has_flag(serve, "--distributed-executor-backend", "ray")
    assert has_flag(serve, "--served-model-name", "qwen3.5-122b")
    assert has_flag(serve, "--tool-call-parser", "qwen3_coder") and has_flag(serve, "--reasoning-parser", "qwen3")
    env = systemd_syntax.environment(unit.unit_text)
    assert env["RAY_ADDRESS"] == "192.168.200.12:6379"
    assert env["NCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == "enp1s0f1np1"
    assert env["VLLM_HOST_IP"] == "192.168.200.12"


def test_duo_ray_units_bind_to_fabric_addresses():
    s = snap(DUO)
    units = {u.node.name: u for u in s.units if "-ray-" in u._name}
    head = engine_argv(units[HEAD].unit_text)
    worker = engine_argv(units[SECOND].unit_text)
    assert "--head" in head and "--node-ip-address=192.168.200.12" in head
    assert "--address=192.168.200.12:6379" in worker and "--node-ip-address=192.168.200.13" in worker
    assert systemd_syntax.environment(units[SECOND].unit_text)["VLLM_HOST_IP"] == "192.168.200.13"


# ---------------------------------------------------------------------------------------------
# rtxpro-quad: one box, four RTX PRO 6000, SGLang NVFP4 TP 4 — seed 003: SGLang main in a venv;
# rtxpro-quad-docker: the same from SGLang's CUDA 13 image


def quad_launch(stack: str) -> tuple[list[str], list[str]]:
    """(the unit's whole ExecStart, the SGLang launch from its python on)."""
    [unit] = [u for u in snap(stack).units if u.unit_name == "bws-qwen35-397b.service"]
    argv = engine_argv(unit.unit_text)
    python = next(i for i, a in enumerate(argv) if a.rsplit("/", 1)[-1] == "python3")
    return argv, argv[python:]


@pytest.mark.parametrize("stack", ["rtxpro-quad", "rtxpro-quad-docker"])
def test_quad_sglang_command_line(stack):
    argv, launch = quad_launch(stack)
    assert launch[1:3] == ["-m", "sglang.launch_server"]
    assert has_flag(launch, "--quantization", "modelopt_fp4")
    assert has_flag(launch, "--moe-runner-backend", "flashinfer_cutlass")
    fp4 = [f for f in ("--fp4-gemm-backend", "--fp4-gemm-runner-backend") if f in launch]
    assert len(fp4) == 1 and flag_value(launch, fp4[0]) in {"flashinfer_cudnn", "flashinfer_cutlass"}
    assert has_flag(launch, "--tp", "4")
    assert has_flag(launch, "--tool-call-parser", "qwen3_coder") and has_flag(launch, "--reasoning-parser", "qwen3")
    assert "--enable-hierarchical-cache" in launch and float(flag_value(launch, "--hicache-ratio")) > 0
    assert "--nnodes" not in launch


def test_quad_docker_runs_the_container_with_the_gpus():
    argv, launch = quad_launch("rtxpro-quad-docker")
    assert argv[0] == "/usr/bin/docker" and launch[0] == "python3"
    assert has_flag(argv, "--shm-size", "64g") and has_flag(argv, "--gpus", "all")


def test_quad_runs_sglang_from_the_venvs_python_without_docker():
    """Seed 003: SGLang main in a venv, no Docker: the unit runs the venv's python directly, as
    the seed's service ran it (its FP4 GEMM backend flashinfer_cudnn, under the spelling of the
    SGLang main the stack pins: --fp4-gemm-backend; the seed's build took --fp4-gemm-runner-backend)."""
    s = snap("rtxpro-quad")
    argv, launch = quad_launch("rtxpro-quad")
    assert argv == launch
    assert argv[0] == "/opt/blackwell-serving/venvs/sglang-main/current/bin/python3"
    assert has_flag(launch, "--fp4-gemm-backend", "flashinfer_cudnn")
    [unit] = [u for u in s.units if u.unit_name == "bws-qwen35-397b.service"]
    assert "docker" not in unit.unit_text.lower()
    uses = [r.name for r in s.commands()
            if re.search(r"^[^#]*\bdocker (run|build|pull|load|save|image)\b", script_of(r) or "", re.M)]
    assert not uses, f"steps of the venv stack run Docker: {uses}"


def test_quad_order_and_nodes():
    for stack, engine in (("rtxpro-quad", "sglang-main-venv-llm-server"), ("rtxpro-quad-docker", "sglang-cu13-build")):
        s = snap(stack)
        assert {host_of(r) for r in s.commands()} == {"llm-server"}
        deps = dep_names(s.by_name("qwen35-397b-llm-server-install"))
        assert {"llm-server-sglang-kimi-retire", engine, "qwen35-397b-fetch"} <= deps
        assert dep_names(s.by_name("qwen35-397b-health")) == {"qwen35-397b-llm-server-install",
                                                              "qwen35-397b-llm-server-env"}


def test_ray_nodes_get_the_deployments_env_and_page_cache_drop():
    """Every Ray node runs engine ranks: it gets the deployment's env and, on unified memory,
    its page-cache drop before loading, as the engine's own unit does."""
    s = snap(DUO)
    [d] = s.spec.deployments
    for u in s.units:
        if "-ray-" in u._name:
            for k, v in d.env.items():
                assert f"{k}={v}" in u.unit_text, u.unit_text
            assert ("drop_caches" in u.unit_text) == d.drop_page_cache


def test_the_upload_on_the_operators_machine_runs_like_a_remote_step():
    """Its create is the short command line of every step (components/remote.command_line): the
    script and then the node's SSH key arrive on stdin, which is a secret; no script text in argv."""
    from components.steps.remote import read_script

    s = snap("lab")
    upload = s.by_name("tiny-upload")
    line, stdin = plain(upload.inputs["create"]), upload.inputs["stdin"]
    assert line.startswith("exec env BWS_STEP='tiny-upload on lab-1' ") and "\n" not in line and len(line) < 600
    assert "BWS_DOING='Upload model tiny from this machine to lab-1' BWS_NODE=lab-1" in line
    assert read_script(line, plain(stdin)).startswith("#!/usr/bin/env bash\n# On the operator's machine")
    if s.spec.nodes[0].ssh.private_key_path and "PRIVATE KEY" in plain(stdin):
        assert stdin.get("4dabf18193072939515e22adb298388d"), "stdin with the key is not marked secret"
