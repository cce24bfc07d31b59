"""The optional fabric bandwidth check (fabric.bandwidth_check): its schema, its place in the
graph (only when configured, on the head, after the image is on every node, before anything is
stopped or started), what its script runs on each node, and the all-reduce's arithmetic."""

from __future__ import annotations

import importlib.util
import re
import shlex

import pytest
from pydantic import ValidationError

from components.config.schema import BandwidthCheck
from components.preflight.bandwidth import time_bound_s
from components.steps.render import TEMPLATES
from tests.unit.mocked import STACKS, script_of, snapshot, stdin_data
from tests.unit.test_graph import closure, dep_names, host_of, parent_of, snap


def with_check(stack: str, **check):
    """The stack's spec with fabric.bandwidth_check replaced (None: removed)."""
    s = snap(stack)
    fabric = s.spec.fabric.model_copy(update={"bandwidth_check": BandwidthCheck(**check) if check else None})
    return s.spec.model_copy(update={"fabric": fabric})


def bandwidth_commands(s) -> dict:
    return {r.name: r for r in s.commands() if r.name.endswith("-bandwidth-check")}


# ---------------------------------------------------------------------------------------------
# Schema


def test_defaults_and_off_when_absent():
    check = BandwidthCheck()
    assert (check.size_mb, check.iterations, check.port, check.min_bus_gbps) == (256, 5, 29555, None)
    assert snap("rtxpro-quad").spec.fabric is None
    assert with_check("lab").fabric.bandwidth_check is None


@pytest.mark.parametrize("field,value", [("size_mb", 0), ("size_mb", 8193), ("iterations", 0), ("iterations", 101),
                                         ("port", 1023), ("port", 65536), ("min_bus_gbps", 0), ("min_bus_gbps", -1),
                                         ("warmup", 1)])
def test_out_of_range_values_are_refused(field, value):
    with pytest.raises(ValidationError):
        BandwidthCheck(**{field: value})


def test_every_field_is_documented():
    assert all(f.description for f in BandwidthCheck.model_fields.values())


# ---------------------------------------------------------------------------------------------
# Graph


@pytest.mark.parametrize("stack", STACKS)
def test_one_check_per_deployment_with_ranks_on_several_nodes_only_when_configured(stack):
    """A Ray cluster whose engine runs on its head alone (executor: head) gets none: no rank of it
    crosses the fabric."""
    s = snap(stack)
    configured = s.spec.fabric is not None and s.spec.fabric.bandwidth_check is not None
    multi = [d.name for d in s.spec.deployments if d.ranks_span_nodes]
    expected = {f"{d}-bandwidth-check" for d in multi} if configured else set()
    assert set(bandwidth_commands(s)) == expected
    assert set(s.serving.bus_gbps) == (set(multi) if configured else set())


def test_not_there_when_the_lab_does_not_ask_for_it():
    s = snapshot("lab", with_check("lab"))
    assert not bandwidth_commands(s)
    assert s.serving.bus_gbps == {}
    assert not any(r.type == "blackwell:preflight:FabricBandwidth" for r in s.recorder.resources.values())


@pytest.mark.parametrize("stack", ["lab", "spark-duo", "spark-duo-sglang"])
def test_runs_on_the_head_after_the_image_is_on_every_node(stack):
    s = snap(stack)
    [d] = [d for d in s.spec.deployments if d.ranks_span_nodes]
    r = s.by_name(f"{d.name}-bandwidth-check")
    assert parent_of(s, r).type == "blackwell:preflight:FabricBandwidth"
    assert host_of(r) == s.spec.node(d.nodes[0]).host
    image, model = s.spec.image(d.image), s.spec.model(d.model)
    deps = dep_names(r)
    for n in d.nodes:
        assert (f"{image.name}-build" if n == image.build_node else f"{image.name}-sync-{n}") in deps
        # A model copy over the same link would share what is measured.
        assert (f"{model.name}-fetch" if n == model.fetch_node else f"{model.name}-to-{n}") in deps
        assert f"{n}-fabric-check" in deps
    assert stdin_data(r) == (TEMPLATES / "scripts" / "allreduce_bandwidth.py").read_text()
    assert "BWS_INPUTS=" in r.inputs["create"], "a new image under the same tag must measure again"


@pytest.mark.parametrize("stack", ["lab", "spark-duo", "spark-duo-sglang"])
def test_retire_and_every_unit_wait_for_it(stack):
    s = snap(stack)
    checks = set(bandwidth_commands(s))
    assert checks
    for ref in s.spec.retire:
        assert checks <= dep_names(s.by_name(f"{ref.node}-{ref.unit.removesuffix('.service')}-retire"))
    for u in s.units:
        assert checks <= closure(s, f"{u._name}-install"), f"{u.unit_name} may start before the measurement"


def test_two_measurements_never_share_the_link():
    s = snap("lab")
    # A second Ray cluster on nodes of its own (two clusters may not share a node), on the same fabric.
    more = [s.spec.nodes[1].model_copy(update={"name": f"lab-{k}", "host": f"198.18.0.1{k}",
                                                "fabric_address": f"198.19.0.1{k}"}) for k in (3, 4)]
    placed = ["lab-1", "lab-2", "lab-3", "lab-4"]
    spec = s.spec.model_copy(update={
        "nodes": [*s.spec.nodes, *more],
        "images": [i.model_copy(update={"nodes": placed}) for i in s.spec.images],
        "models": [m.model_copy(update={"nodes": placed}) for m in s.spec.models],
        "deployments": [*s.spec.deployments, s.spec.deployments[0].model_copy(
            update={"name": "tiny2", "port": 8001, "nodes": ["lab-4", "lab-3"], "served_name": "tiny2"})]})
    assert "tiny-bandwidth-check" in dep_names(snapshot("lab", spec).by_name("tiny2-bandwidth-check"))


# ---------------------------------------------------------------------------------------------
# The script


def rank_lines(script: str) -> dict[int, list[str]]:
    """RANK → the argv of that rank's command as this node's shell sees it (a peer's once more
    unquoted: the peer's shell reads it again)."""
    joined = script.replace("\\\n", " ")
    ranks = {}
    for line in joined.splitlines():
        line = line.strip()
        peer = line.startswith("peer timeout ")
        if not (line.startswith("timeout ") or peer):
            continue
        words = shlex.split(line.split(" < ")[0])
        if peer:
            words = shlex.split(" ".join(words[1:]))
        rank = next(int(w.split("=", 1)[1]) for w in words if w.startswith("RANK="))
        ranks[rank] = words
    return ranks


def env_of(argv: list[str]) -> dict[str, str]:
    start = argv.index("env") + 1
    return dict(w.split("=", 1) for w in argv[start:argv.index("docker")])


@pytest.mark.parametrize("stack,backend", [("lab", "gloo"), ("spark-duo", "nccl"), ("spark-duo-sglang", "nccl")])
def test_every_node_runs_one_rank_that_meets_on_the_heads_fabric_address(stack, backend):
    s = snap(stack)
    [d] = [d for d in s.spec.deployments if d.ranks_span_nodes]
    check = s.spec.fabric.bandwidth_check
    script = script_of(s.by_name(f"{d.name}-bandwidth-check"))
    ranks = rank_lines(script)
    assert sorted(ranks) == list(range(len(d.nodes)))
    head = str(s.spec.node(d.nodes[0]).fabric_address)
    bound = time_bound_s(check)
    for rank, argv in ranks.items():
        node = s.spec.node(d.nodes[rank])
        env = env_of(argv)
        assert env["MASTER_ADDR"] == head and env["MASTER_PORT"] == str(check.port)
        assert env["WORLD_SIZE"] == str(len(d.nodes)) and env["RANK"] == str(rank)
        assert env["GLOO_SOCKET_IFNAME"] == env["NCCL_SOCKET_IFNAME"] == s.spec.fabric.netdev
        assert env["VLLM_HOST_IP"] == str(node.fabric_address)
        # The deployment's own env (NCCL_* settings included) is the engine's: the ranks get it.
        assert d.env.items() <= env.items()
        assert argv[:4] == ["timeout", "-k", "10", str(bound)]
        assert argv[argv.index("--name") + 1] == f"bws-{d.name}-bw-{rank}"
        assert argv[-5:] == ["-", backend, str(check.size_mb), str(check.iterations), str(bound)]
        assert ("--gpus" in argv) == d.docker.gpus
    # The peers are reached on their fabric addresses, with their pinned host keys.
    for n in d.nodes[1:]:
        node = s.spec.node(n)
        assert f"root@{node.fabric_address}" in script and node.ssh.host_key in script
    # Every container is removed before its rank starts (a leftover) and on the way out.
    assert f"container=bws-{d.name}-bw-0" in script and script.count('docker rm -f "$container"') == 2
    for rank in range(1, len(d.nodes)):
        assert f"peer timeout 60 docker rm -f bws-{d.name}-bw-{rank} " in script
    # The command line's words after the runner: lock, waiting message, timeout, reader.
    words = shlex.split(s.by_name(f"{d.name}-bandwidth-check").inputs["create"])
    assert int(words[words.index("bws-step") + 3]) > bound


def test_a_floor_set_in_the_stack_replaces_the_derived_one():
    without = script_of(snapshot("lab", with_check("lab", size_mb=64)).by_name("tiny-bandwidth-check"))
    assert re.search(r"^  fraction=0\.01$", without, re.M) and not re.search(r"^want=[0-9]", without, re.M)
    script = script_of(snapshot("lab", with_check("lab", size_mb=64, min_bus_gbps=12.5)).by_name(
        "tiny-bandwidth-check"))
    assert re.search(r"^want=12\.5$", script, re.M) and "fraction=" not in script


def test_every_node_reports_its_link_speed_before_its_rank_starts():
    script = script_of(snap("lab").by_name("tiny-bandwidth-check"))
    assert 'echo lab-1 eth1 "$(cat /sys/class/net/eth1/speed 2>/dev/null || echo -1)" >> "$speeds"' in script
    peer = script.index('echo lab-2 eth1 \\\n    "$(peer cat /sys/class/net/eth1/speed 2>/dev/null || echo -1)" >> "$speeds"')
    assert peer < script.index("  remove\n", peer)


@pytest.mark.parametrize("stack, backend, fraction", [("lab", "gloo", 0.01), ("spark-duo", "nccl", 0.6)])
def test_the_fraction_of_the_line_rate_by_backend(stack, backend, fraction):
    from components.preflight.bandwidth import LINE_RATE_FRACTION, floor_values
    s = snap(stack)
    [d] = [d for d in s.spec.deployments if d.ranks_span_nodes]
    values = floor_values(d, s.spec.fabric, 0, s.spec.fabric.netdev)
    assert values["fraction"] == LINE_RATE_FRACTION[backend] == fraction
    words = (["TCP", "NCCL_IB_DISABLE", "fabric.gid_index", "PCIe twins", "fabric.hcas"] if backend == "nccl"
             else ["TCP", "tc qdisc show dev eth1", "GLOO_SOCKET_IFNAME=eth1"])
    assert all(w in values["cause"] + values["fix"] for w in words), values


def floor_branch(script: str) -> str:
    """The script's floor, from the measured figure on, as a bash snippet of its own."""
    start = script.index('gbps=$(sed -n')
    return script[script.index("\n", script.index("\nfi\n", start) + 1) + 1:]


def run_floor(script: str, gbps: str, speeds: dict[str, str], tmp_path) -> tuple[int, str]:
    """Runs the floor with rank 0's measure `gbps` and the nodes' link `speeds`: (exit, log)."""
    import subprocess

    file = tmp_path / "speeds"
    file.write_text("".join(f"{n} eth1 {v}\n" for n, v in speeds.items()))
    prelude = (f'log() {{ printf "%s\\n" "$*" >&2; }}\nnodes="a and b"\ngbps={gbps}\n'
               f'speeds={shlex.quote(str(file))}\n')
    done = subprocess.run(["bash", "-c", prelude + floor_branch(script)], capture_output=True, text=True)
    return done.returncode, done.stderr + done.stdout


def test_a_throttled_gloo_link_fails_the_floor_derived_from_its_speed(tmp_path):
    script = script_of(snap("lab").by_name("tiny-bandwidth-check"))
    code, said = run_floor(script, "0.050", {"lab-1": "10000", "lab-2": "10000"}, tmp_path)
    assert code == 1, said
    assert ("the bus bandwidth between a and b is 0.050 Gbit/s, below the expected 0.1 Gbit/s (derived: 0.01 of "
            "the 10000 Mb/s link speed of lab-1 (/sys/class/net/eth1/speed), the slowest node's, as "
            "fabric.bandwidth_check.min_bus_gbps is not set); likely cause: gloo moves its data over TCP") in said
    assert "tc qdisc show dev eth1" in said and said.rstrip().endswith("nothing was stopped")


def test_a_healthy_gloo_link_passes_and_says_its_floor(tmp_path):
    script = script_of(snap("lab").by_name("tiny-bandwidth-check"))
    code, said = run_floor(script, "4.074", {"lab-1": "10000", "lab-2": "10000"}, tmp_path)
    assert code == 0, said
    assert "bus bandwidth 4.074 Gbit/s between a and b (floor 0.1 Gbit/s: derived: 0.01 of" in said
    assert "bus-gbps=4.074" in said


def test_one_twin_on_a_spark_pair_fails_against_the_slowest_link(tmp_path):
    """98 Gbit/s: one of the port's two PCIe twins (the figure a Spark pair measured)."""
    script = script_of(snap("spark-duo").by_name("qwen35-bandwidth-check"))
    code, said = run_floor(script, "98.0", {"spark-1a32": "200000", "spark-5be3": "200000"}, tmp_path)
    assert code == 1 and "below the expected 120 Gbit/s (derived: 0.6 of the 200000 Mb/s link speed" in said, said
    for words in ("NCCL fell back to TCP sockets", "fabric.disable_ib", "NCCL_IB_DISABLE=1 in deployments[0].env",
                  "fabric.gid_index", "one HCA of the port's two PCIe twins", "NCCL_DEBUG: INFO"):
        assert words in said, words
    # The slowest node sets the floor: 0.6 of 100000 Mb/s.
    code, said = run_floor(script, "98.0", {"spark-1a32": "200000", "spark-5be3": "100000"}, tmp_path)
    assert code == 0 and "floor 60 Gbit/s: derived: 0.6 of the 100000 Mb/s link speed of spark-5be3 (" in said, said


@pytest.mark.parametrize("speed", ["-1", ""])
def test_a_link_without_a_speed_derives_no_floor_and_says_so(speed, tmp_path):
    script = script_of(snap("lab").by_name("tiny-bandwidth-check"))
    code, said = run_floor(script, "0.050", {"lab-1": "10000", "lab-2": speed}, tmp_path)
    assert code == 0, said
    assert "no floor derived: the fabric link of lab-2 (/sys/class/net/eth1/speed) reports no speed" in said
    assert "set fabric.bandwidth_check.min_bus_gbps for one" in said and "bus-gbps=0.050" in said


def test_a_floor_set_in_the_stack_names_its_key(tmp_path):
    script = script_of(snapshot("lab", with_check("lab", size_mb=64, min_bus_gbps=12.5)).by_name(
        "tiny-bandwidth-check"))
    code, said = run_floor(script, "4.0", {"lab-1": "-1", "lab-2": "-1"}, tmp_path)
    assert code == 1 and "is 4.0 Gbit/s, below the expected 12.5 Gbit/s (fabric.bandwidth_check.min_bus_gbps)" in said


def test_the_time_bound_grows_with_the_work_and_stays_under_the_commands():
    assert time_bound_s(BandwidthCheck(size_mb=1, iterations=1)) == 301
    assert time_bound_s(BandwidthCheck(size_mb=1024, iterations=5)) > time_bound_s(BandwidthCheck(size_mb=64))
    # The largest check still ends within the default 4 h of a remote command.
    assert time_bound_s(BandwidthCheck(size_mb=8192, iterations=100)) + 120 < 4 * 3600


def test_an_explicit_time_bound_replaces_the_computed_one():
    assert time_bound_s(BandwidthCheck(size_mb=1024, timeout_s=600)) == 600
    s = snapshot("lab", with_check("lab", size_mb=64, timeout_s=45))
    [argv] = [a for r, a in rank_lines(script_of(s.by_name("tiny-bandwidth-check"))).items() if r == 0]
    assert argv[:4] == ["timeout", "-k", "10", "45"]
    for bad in (29, 14001):
        with pytest.raises(ValidationError):
            BandwidthCheck(timeout_s=bad)


def failure_branch(script: str) -> str:
    """The script's handling of a failed rank 0, as a bash snippet of its own."""
    start = script.index('if [ "$rc" -ne 0 ]; then\n  stage=')
    return script[start:script.index("\nfi\n", start) + 4]


def run_failure(script: str, rc: int, stages: list[str], tmp_path) -> tuple[int, str]:
    """Runs the failure branch with rank 0 ended by `rc` after printing `stages`: (exit, log)."""
    import subprocess

    out = tmp_path / "out"
    out.write_text("".join(f"stage={x}\n" for x in stages))
    prelude = f'log() {{ printf "%s\\n" "$*" >&2; }}\nnodes="a and b"\nout={shlex.quote(str(out))}\nrc={rc}\n'
    done = subprocess.run(["bash", "-c", prelude + failure_branch(script) + "echo reached-the-end\n"],
                          capture_output=True, text=True)
    return done.returncode, done.stderr + done.stdout


@pytest.mark.parametrize("rc", [124, 137])
def test_an_nccl_hang_fails_with_the_settings_of_each_node_and_the_fix(rc, tmp_path):
    """Seed 002: SGLang across two Sparks hung in NCCL initialisation. The preflight's time
    bound stops it, says where it hung, and names each node's NCCL settings and their keys."""
    s = snap("spark-duo-sglang")
    [d] = s.spec.deployments
    script = script_of(s.by_name(f"{d.name}-bandwidth-check"))
    code, said = run_failure(script, rc, ["rendezvous of 2 ranks at 192.168.200.12:29555",
                                          "nccl set-up and warm-up all-reduce"], tmp_path)
    assert code == 1 and "reached-the-end" not in said
    assert "did not finish in 600 s (fabric.bandwidth_check.timeout_s; it hung in: nccl set-up and warm-up" in said
    fabric = s.spec.fabric
    for n in d.nodes:
        assert (f"{n}: NCCL_SOCKET_IFNAME={fabric.netdev} NCCL_IB_HCA={','.join(fabric.hcas)} "
                f"NCCL_IB_GID_INDEX={fabric.gid_index}") in said
    for words in ("fabric.netdev", "fabric.hcas", "fabric.gid_index", "RoCEv2", "ibdev2netdev",
                  "NCCL_DEBUG: INFO to deployments[0].env", "fabric.disable_ib", "fix:", "nothing was stopped"):
        assert words in said, words


def test_a_hang_before_the_rendezvous_and_a_plain_failure_say_so(tmp_path):
    script = script_of(snap("spark-duo-sglang").by_name("qwen35-sglang-bandwidth-check"))
    code, said = run_failure(script, 124, [], tmp_path)
    assert code == 1 and "it hung in: start-up, before the rendezvous" in said
    code, said = run_failure(script, 1, ["timed all-reduces"], tmp_path)
    assert code == 1 and "failed (exit 1, above; at: timed all-reduces)" in said and "NCCL_IB_HCA" not in said


def test_a_gloo_hang_names_the_gloo_interface():
    script = script_of(snap("lab").by_name("tiny-bandwidth-check"))
    branch = failure_branch(script)
    assert "lab-1: GLOO_SOCKET_IFNAME=eth1; lab-2: GLOO_SOCKET_IFNAME=eth1" in branch
    assert "NCCL_IB_HCA" not in branch


def test_rank_0_says_each_stage_before_it_starts():
    text = (TEMPLATES / "scripts" / "allreduce_bandwidth.py").read_text()
    stages = [text.index(f'stage(rank, {w}') for w in ('f"rendezvous', 'f"{backend} set-up', '"timed')]
    calls = [text.index(c) for c in ("dist.init_process_group(", "dist.all_reduce(buffer)  # warm-up",
                                      "start = synced()")]
    assert all(st < call for st, call in zip(stages, calls)) and stages == sorted(stages)


# ---------------------------------------------------------------------------------------------
# The all-reduce script's arithmetic (torch is not needed for it)


def allreduce_module():
    path = TEMPLATES / "scripts" / "allreduce_bandwidth.py"
    spec = importlib.util.spec_from_file_location("allreduce_bandwidth", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bus_bandwidth_is_nccl_tests_busbw_in_gigabits():
    bus_gbps = allreduce_module().bus_gbps
    gib = 2**30
    # Two ranks: 2(n-1)/n = 1, so bus = algorithm bandwidth: 1 GiB in 0.1 s = 85.9 Gbit/s.
    assert bus_gbps(gib, 0.1, 2) == pytest.approx(gib * 8 / 0.1 / 1e9)
    assert bus_gbps(gib, 0.1, 2) == pytest.approx(85.899, abs=1e-3)
    # Four ranks move 1.5 times the buffer; eight, 1.75 times.
    assert bus_gbps(gib, 0.1, 4) == pytest.approx(1.5 * bus_gbps(gib, 0.1, 2))
    assert bus_gbps(gib, 0.1, 8) == pytest.approx(1.75 * bus_gbps(gib, 0.1, 2))
    # Twice the time, half the bandwidth.
    assert bus_gbps(gib, 0.2, 2) == pytest.approx(bus_gbps(gib, 0.1, 2) / 2)


@pytest.mark.parametrize("nbytes,seconds,world", [(2**20, 0.0, 2), (2**20, -1.0, 2), (2**20, 1.0, 1), (0, 1.0, 2)])
def test_bus_bandwidth_refuses_what_cannot_be_measured(nbytes, seconds, world):
    with pytest.raises(ValueError):
        allreduce_module().bus_gbps(nbytes, seconds, world)
