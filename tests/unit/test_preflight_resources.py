"""The GPU and memory preflight of every node (components/preflight/resources.py): one read-only
check per node a deployment runs on, before anything is retired; its script run here against
captured nvidia-smi outputs of a GB10 and of 4× RTX PRO 6000 (written from NVIDIA's documented
query format), fake systemctl/docker and a fake /proc."""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from components.preflight.model_facts import GB
from components.preflight.resources import node_claims
from tests.unit.mocked import STACKS, script_of
from tests.unit.test_graph import dep_names, snap

GB10 = "0, GPU-5b1c0d2e-0000-0000-0000-00000000gb10, NVIDIA GB10, [N/A], [N/A]\n"
RTX = "".join(f"{i}, GPU-rtx{i}, NVIDIA RTX PRO 6000 Blackwell Workstation Edition, 97887, {free}\n"
              for i, free in enumerate([97000, 97000, 97000, 97000]))


def run_script(tmp_path, script: str, *, gpus: str | None, apps: str = "", avail_kb: int = 0,
               active: tuple = (), cgroups: dict | None = None, current: dict | None = None):
    """Runs `script` with nvidia-smi (None: not installed), systemctl and docker faked."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal: 131000000 kB\nMemAvailable: {avail_kb} kB\n")
    for pid, cg in (cgroups or {}).items():
        (proc / str(pid)).mkdir()
        (proc / str(pid) / "cgroup").write_text(f"0::{cg}\n")
    cgroot = tmp_path / "cg"
    for cg, b in (current or {}).items():
        (cgroot / cg.lstrip("/")).mkdir(parents=True)
        (cgroot / cg.lstrip("/") / "memory.current").write_text(f"{b}\n")
    if gpus is not None:
        (tmp_path / "gpus").write_text(gpus)
        (tmp_path / "apps").write_text(apps)
        (bin_ / "nvidia-smi").write_text(textwrap.dedent(f"""\
            #!/bin/bash
            case "$1" in --query-gpu=*) cat {tmp_path}/gpus;; --query-compute-apps=*) cat {tmp_path}/apps;; esac
            """))
    (bin_ / "systemctl").write_text(textwrap.dedent(f"""\
        #!/bin/bash
        case "$1" in
          is-active) for u in {' '.join(active)}; do [ "$u" = "$3" ] && exit 0; done; exit 3;;
          show) echo "/system.slice/$5";;
          cat) echo "ExecStart=/usr/bin/docker run --rm --name glm-engine image";;
        esac
        """))
    (bin_ / "docker").write_text("#!/bin/bash\necho 4242\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    text = script.replace("proc=/proc\n", f"proc={proc}\n").replace("cgroot=/sys/fs/cgroup\n", f"cgroot={cgroot}\n")
    done = subprocess.run(["bash", "-c", text], capture_output=True, text=True,
                          env={"PATH": f"{bin_}:/usr/bin:/bin"})
    return done.returncode, done.stderr


def check_script(stack: str, node: str) -> str:
    return script_of(snap(stack).by_name(f"{node}-resources-check"))


# ---------------------------------------------------------------------------------------------
# The graph


@pytest.mark.parametrize("stack", STACKS)
def test_one_check_per_node_a_deployment_runs_on_and_retiring_waits_for_it(stack):
    s = snap(stack)
    nodes = {n for d in s.spec.deployments for n in d.nodes if s.spec.node(n).gpu.kind != "cpu"}
    checks = {r.name for r in s.commands() if r.name.endswith("-resources-check")}
    assert checks == {f"{n}-resources-check" for n in nodes}
    for ref in s.spec.retire:
        assert checks <= dep_names(s.by_name(f"{ref.node}-{ref.unit.removesuffix('.service')}-retire"))
    for name in checks:
        assert not dep_names(s.by_name(name)) - {"pulumi:providers"}, "read-only: it waits for nothing"


def test_claims_are_the_engines_reservation_and_the_ray_object_store():
    spec = snap("spark-duo").spec
    claims = node_claims(spec)
    for n in ("spark-1a32", "spark-5be3"):
        assert [c.bytes for c in claims[n]] == [int(0.8 * 120 * GB), 4 * GB]
        assert [c.key for c in claims[n]] == ["deployments[0].memory_fraction", "ray.object_store_gb"]
    quad = node_claims(snap("rtxpro-quad").spec)["llm-server"]
    assert [c.bytes for c in quad] == [int(0.85 * 96 * GB * 4)]


# ---------------------------------------------------------------------------------------------
# GPUs


def test_gb10_visible_and_memory_enough_passes(tmp_path):
    code, said = run_script(tmp_path, check_script("spark-duo", "spark-5be3"), gpus=GB10, avail_kb=110_000_000)
    assert code == 0, said
    assert "1 GPU(s) visible: NVIDIA GB10" in said and "MemAvailable 112.6 GB" in said


def test_no_nvidia_smi_fails_with_the_fix(tmp_path):
    code, said = run_script(tmp_path, check_script("spark-duo", "spark-5be3"), gpus=None)
    assert code == 1 and "node spark-5be3: nvidia-smi is not installed" in said and "fix:" in said


def test_fewer_gpus_than_declared_names_the_key_and_vfio(tmp_path):
    """Seed 003 rebound its GPUs between the container and a VM: two left here."""
    code, said = run_script(tmp_path, check_script("rtxpro-quad", "llm-server"), gpus="".join(RTX.splitlines(True)[:2]))
    assert code == 1
    assert "nvidia-smi lists 2 GPU(s)" in said and "declares 4 rtx-pro-6000 (nodes[0].gpu.count)" in said
    assert "vfio-pci" in said and "nothing was stopped" in said


def test_a_gpu_of_another_kind_names_gpu_kind(tmp_path):
    code, said = run_script(tmp_path, check_script("spark-duo", "spark-5be3"),
                            gpus="0, GPU-x, NVIDIA H100 80GB HBM3, 81559, 81000\n", avail_kb=110_000_000)
    assert code == 1 and "GPU 0 is NVIDIA H100 80GB HBM3, not GB10 (nodes[1].gpu.kind gb10)" in said


# ---------------------------------------------------------------------------------------------
# Memory


def test_gb10_short_of_memory_names_figures_holder_and_fix(tmp_path):
    """Seed 000: the kept embeddings server holds memory on the secondary; here too much."""
    code, said = run_script(tmp_path, check_script("spark-duo", "spark-5be3"), gpus=GB10, avail_kb=60_000_000,
                            apps="777, GPU-5b1c0d2e-0000-0000-0000-00000000gb10, 40000\n",
                            cgroups={777: "/system.slice/vllm-embeddings.service"})
    assert code == 1
    assert "node spark-5be3: short of memory by 38.6 GB" in said
    assert "MemAvailable 61.4 GB" in said and "the deployments claim 100.0 GB" in said
    assert "qwen35: memory_fraction 0.8 × 120 GB × 1 GPU (deployments[0].memory_fraction) 96.0 GB" in said
    assert "pid 777 (vllm-embeddings.service) 41.9 GB" in said
    assert "fix: stop it or add its unit to retire:, or lower deployments[0].memory_fraction / ray.object_store_gb" in said


def test_gb10_memory_of_units_to_retire_counts_as_free(tmp_path):
    """Seed 000: GLM holds ~98 GB on the head; it is retired after the checks, before the engine."""
    script = check_script("spark-duo", "spark-1a32")
    glm = "/system.slice/vllm-cluster.service"
    container = "/system.slice/docker-abc.scope"
    kwargs = dict(gpus=GB10, avail_kb=20_000_000, active=("vllm-cluster.service",),
                  apps="4242, GPU-5b1c0d2e-0000-0000-0000-00000000gb10, 60000\n",
                  cgroups={4242: container}, current={glm: 1_000_000_000, container: 30_000_000_000})
    code, said = run_script(tmp_path, script, **kwargs)
    assert code == 0, said
    assert "held by the units retired here (vllm-cluster.service, vllm-proxy.service, vllm-reranker.service)" in said
    # Not retired (not active): its memory is not counted, and the check fails.
    (tmp_path / "again").mkdir()
    code, said = run_script(tmp_path / "again", script, **{**kwargs, "active": ()})
    assert code == 1 and "short of memory" in said and "pid 4242 (docker-abc.scope)" in said


def test_rtx_each_gpu_needs_its_share_and_retired_memory_comes_back(tmp_path):
    script = check_script("rtxpro-quad", "llm-server")
    busy = RTX.replace("97887, 97000\n", "97887, 10000\n", 1)
    apps = "5150, GPU-rtx0, 87000\n"
    code, said = run_script(tmp_path, script, gpus=busy, apps=apps, active=("sglang-kimi.service",),
                            cgroups={5150: "/system.slice/sglang-kimi.service"})
    assert code == 0, said
    (tmp_path / "b").mkdir()
    code, said = run_script(tmp_path / "b", script, gpus=busy, apps=apps,
                            cgroups={5150: "/system.slice/other.service"})
    assert code == 1
    assert "GPU memory is short: GPU 0: 10.5 GB free + 0.0 GB of retired units of 102.6 GB" in said
    assert "each of 4 GPUs needs 81.6 GB" in said and "pid 5150 (other.service)" in said


def test_cpu_nodes_say_no_gpu_expected_and_never_fail_on_memory(tmp_path):
    from components.preflight.resources import script_values
    from components.render import render

    script = render("scripts/preflight-resources.sh.j2", **script_values(snap("lab").spec, "lab-1"))
    code, said = run_script(tmp_path, script, gpus=None, avail_kb=1_000_000)
    assert code == 0, said
    assert "no GPU expected (nodes: gpu.kind cpu); GPU check not run" in said
    assert "not enforced on gpu.kind cpu" in said and "MemAvailable 1.0 GB" in said
