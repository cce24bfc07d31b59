"""The GPU and memory preflight of every node (components/preflight/resources.py): one read-only
check per node a deployment runs on, before anything is retired; its script run here against
captured nvidia-smi outputs of a GB10 and of 4× RTX PRO 6000 (written from NVIDIA's documented
query format), fake systemctl/docker and a fake /proc."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from components.sizing.model_facts import GB
from components.preflight.resources import node_claims
from tests.unit.mocked import STACKS, script_of
from tests.unit.test_graph import dep_names, snap

DATA = Path(__file__).parent / "data" / "nvidia-smi"
GB10 = (DATA / "gb10-query-gpu.csv").read_text()
RTX = (DATA / "rtxpro4-query-gpu.csv").read_text()
HEADERS = {GB10: (DATA / "gb10.txt").read_text(), RTX: (DATA / "rtxpro4.txt").read_text()}


def run_script(tmp_path, script: str, *, gpus: str | None, apps: str = "", avail_kb: int = 0,
               active: tuple = (), cgroups: dict | None = None, current: dict | None = None,
               header: str | None = None):
    """Runs `script` with nvidia-smi (None: not installed; with no argument it prints `header`,
    by default the captured table of the machine whose GPUs `gpus` lists), systemctl and docker
    faked."""
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
        (tmp_path / "header").write_text(header if header is not None else HEADERS.get(gpus, HEADERS[RTX]))
        (bin_ / "nvidia-smi").write_text(textwrap.dedent(f"""\
            #!/bin/bash
            case "$1" in
              --query-gpu=*) cat {tmp_path}/gpus;;
              --query-compute-apps=*) cat {tmp_path}/apps;;
              "") cat {tmp_path}/header;;
            esac
            """))
    (bin_ / "systemctl").write_text(textwrap.dedent(f"""\
        #!/bin/bash
        case "$1" in
          is-active) for u in {' '.join(active)}; do [ "$u" = "${{@: -1}}" ] && {{ echo active; exit 0; }}; done
                     echo inactive; exit 3;;
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
    """CPU nodes (the lab) included: their check says "no GPU expected", never a silent skip."""
    s = snap(stack)
    nodes = {n for d in s.spec.deployments for n in d.nodes}
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


@pytest.mark.parametrize("node,index", [("lab-1", 0), ("lab-2", 1)])
def test_cpu_nodes_say_no_gpu_expected_and_never_fail_on_memory(tmp_path, node, index):
    """The lab's step (a step of its todo list), as the program renders it: no nvidia-smi there."""
    code, said = run_script(tmp_path, check_script("lab", node), gpus=None, avail_kb=1_000_000)
    assert code == 0, said
    assert (f"no GPU expected: the stack declares none on {node} (nodes[{index}].gpu.kind cpu); "
            "nvidia-smi, driver CUDA and container GPU checks not run") in said
    assert "not enforced on gpu.kind cpu" in said and "MemAvailable 1.0 GB" in said




# ---------------------------------------------------------------------------------------------
# The driver's CUDA version (images[].min_cuda)


def test_captured_headers_name_driver_and_cuda_13(tmp_path):
    code, said = run_script(tmp_path, check_script("rtxpro-quad", "llm-server"), gpus=RTX)
    assert code == 0, said
    assert "driver 580.95.05 supports CUDA 13.0; image sglang-main needs 13.0 (images[0].min_cuda)" in said


def test_driver_too_old_for_the_engine_fails_with_both_versions_and_the_fix(tmp_path):
    old = HEADERS[RTX].replace("Driver Version: 580.95.05      CUDA Version: 13.0",
                               "Driver Version: 570.133.20     CUDA Version: 12.8")
    code, said = run_script(tmp_path, check_script("rtxpro-quad", "llm-server"), gpus=RTX, header=old)
    assert code == 1
    assert ("the NVIDIA driver 570.133.20 supports CUDA 12.8, but image sglang-main needs CUDA 13.0 "
            "(images[0].min_cuda)") in said
    assert "fix: install an NVIDIA driver for CUDA 13.0 on llm-server (Linux driver 580.65.06 or newer)" in said
    assert "nothing was stopped" in said


def test_a_newer_major_passes_and_a_minor_is_compared_as_a_number(tmp_path):
    newer = HEADERS[RTX].replace("CUDA Version: 13.0", "CUDA Version: 13.10")
    code, said = run_script(tmp_path, check_script("rtxpro-quad", "llm-server"), gpus=RTX, header=newer)
    assert code == 0 and "supports CUDA 13.10" in said
    (tmp_path / "b").mkdir()
    older = HEADERS[RTX].replace("CUDA Version: 13.0", "CUDA Version: 12.9")
    code, said = run_script(tmp_path / "b", check_script("rtxpro-quad", "llm-server"), gpus=RTX, header=older)
    assert code == 1 and "supports CUDA 12.9, but image sglang-main needs CUDA 13.0" in said


def test_a_header_without_cuda_version_fails(tmp_path):
    code, said = run_script(tmp_path, check_script("rtxpro-quad", "llm-server"), gpus=RTX, header="garbage\n")
    assert code == 1 and "names no CUDA Version" in said


def test_without_min_cuda_the_driver_cuda_is_reported_not_compared(tmp_path):
    code, said = run_script(tmp_path, check_script("spark-duo", "spark-5be3"), gpus=GB10, avail_kb=110_000_000)
    assert code == 0, said
    assert "driver 580.95.05 supports CUDA 13.0; no images[].min_cuda for the engines here: not compared" in said


def test_min_cuda_of_an_image_is_a_version():
    from components.config.schema import ImageSpec
    base = dict(name="x", base="a/b:c", build_node="n", nodes=["n"])
    assert ImageSpec(**base, min_cuda="13.0").min_cuda == "13.0"
    for bad in ("13", "cu130", "13.0.1", "13.0; rm -rf /"):
        with pytest.raises(ValueError):
            ImageSpec(**base, min_cuda=bad)


# ---------------------------------------------------------------------------------------------
# Docker runtime: a container of the engine image sees the GPUs


def container_script(stack: str, node: str, image: str) -> str:
    return script_of(snap(stack).by_name(f"{node}-{image}-gpus-check"))


@pytest.mark.parametrize("stack", STACKS)
def test_container_check_per_docker_image_on_gpu_nodes_after_the_image_before_retiring(stack):
    from components.preflight.resources import container_gpu_checks
    s = snap(stack)
    want = {f"{n}-{img}-gpus-check" for n, img, _ in container_gpu_checks(s.spec)}
    assert {r.name for r in s.commands() if r.name.endswith("-gpus-check")} == want
    for n, img, _ in container_gpu_checks(s.spec):
        name = f"{n}-{img}-gpus-check"
        image = s.spec.image(img)
        # The image on that node: built there, or copied there.
        assert (f"{img}-build" if n == image.build_node else f"{img}-sync-{n}") in dep_names(s.by_name(name))
        for ref in s.spec.retire:
            assert name in dep_names(s.by_name(f"{ref.node}-{ref.unit.removesuffix('.service')}-retire"))
    expected = {"lab": set(), "rtxpro-quad": set(), "rtxpro-quad-docker": {"llm-server-sglang-cu13-gpus-check"},
                "spark-duo": {"spark-1a32-vllm-qwen35-gpus-check", "spark-5be3-vllm-qwen35-gpus-check"}}
    if stack in expected:
        assert want == expected[stack]


def run_container_check(tmp_path, script: str, *, listing: str, rc: int = 0, sleep: bool = False,
                        image_env: str = "PATH=/usr/bin\n"):
    """Runs the container check with docker faked: `image inspect` prints image_env (one
    variable per line, as the script's format asks), `run` prints `listing` and exits rc; and
    nvidia-smi printing the GB10's captured table."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (tmp_path / "listing").write_text(listing)
    (tmp_path / "env").write_text(image_env)
    (bin_ / "nvidia-smi").write_text(f"#!/bin/bash\ncat {DATA / 'gb10.txt'}\n")
    (bin_ / "nvidia-smi").chmod(0o755)
    (bin_ / "docker").write_text(textwrap.dedent(f"""\
        #!/bin/bash
        [ "$1" = image ] && {{ cat {tmp_path}/env; exit 0; }}
        echo "$@" > {tmp_path}/argv
        {"sleep 30" if sleep else ""}
        cat {tmp_path}/listing
        exit {rc}
        """))
    (bin_ / "docker").chmod(0o755)
    text = script.replace("bound=120\n", "bound=1\n") if sleep else script
    done = subprocess.run(["bash", "-c", text], capture_output=True, text=True,
                          env={"PATH": f"{bin_}:/usr/bin:/bin"})
    return done.returncode, done.stderr, (tmp_path / "argv").read_text()


def test_container_sees_all_four_rtx_passes(tmp_path):
    script = container_script("rtxpro-quad-docker", "llm-server", "sglang-cu13")
    code, said, argv = run_container_check(tmp_path, script, listing=(DATA / "rtxpro4-L.txt").read_text())
    assert code == 0, said
    assert argv.startswith("run --rm --gpus all --entrypoint nvidia-smi blackwell-serving/sglang-cu13:")
    assert argv.rstrip().endswith(" -L")
    assert "a container of image sglang-cu13 sees 4 GPU(s): GPU 0: NVIDIA RTX PRO 6000" in said


def test_container_sees_the_gb10(tmp_path):
    script = container_script("spark-duo", "spark-5be3", "vllm-qwen35")
    code, said, argv = run_container_check(tmp_path, script, listing=(DATA / "gb10-L.txt").read_text())
    assert code == 0, said
    assert "hellohal2064/vllm-qwen3.5-gb10:latest -L" in argv and "sees 1 GPU(s): GPU 0: NVIDIA GB10" in said


def test_container_seeing_fewer_gpus_fails_with_counts_and_the_fix(tmp_path):
    script = container_script("rtxpro-quad-docker", "llm-server", "sglang-cu13")
    two = "".join((DATA / "rtxpro4-L.txt").read_text().splitlines(True)[:2])
    code, said, _ = run_container_check(tmp_path, script, listing=two)
    assert code == 1
    assert "a container of image sglang-cu13 sees 2 GPU(s)" in said and "the host has 4 (nodes[0].gpu.count)" in said
    assert "fix: install the NVIDIA Container Toolkit on llm-server" in said and "nothing was stopped" in said


def test_no_container_runtime_fails_with_dockers_words(tmp_path):
    script = container_script("rtxpro-quad-docker", "llm-server", "sglang-cu13")
    err = ("docker: Error response from daemon: could not select device driver \"\" with capabilities: "
           "[[gpu]].\n")
    code, said, _ = run_container_check(tmp_path, script, listing=err, rc=125)
    assert code == 1
    assert "does not see the GPUs" in said and "exits 125" in said and "could not select device driver" in said


CUDA_13_IMAGE_ENV = ("PATH=/usr/local/nvidia/bin:/usr/bin\nCUDA_VERSION=13.0.1\n"
                     "NVIDIA_REQUIRE_CUDA=cuda>=13.0 brand=unknown,driver>=535,driver<536\n")


def test_the_images_own_cuda_requirement_is_reported_without_min_cuda(tmp_path):
    script = container_script("spark-duo", "spark-5be3", "vllm-qwen35")
    code, said, _ = run_container_check(tmp_path, script, listing=(DATA / "gb10-L.txt").read_text(),
                                        image_env=CUDA_13_IMAGE_ENV)
    assert code == 0, said
    assert "image vllm-qwen35 requires cuda>=13.0" in said


def test_an_image_that_declares_no_cuda_is_said_so(tmp_path):
    script = container_script("spark-duo", "spark-5be3", "vllm-qwen35")
    code, said, _ = run_container_check(tmp_path, script, listing=(DATA / "gb10-L.txt").read_text())
    assert code == 0 and "requires no CUDA version (no NVIDIA_REQUIRE_CUDA" in said


def test_a_driver_older_than_the_images_cuda_fails_with_both_versions_and_the_fix(tmp_path):
    """The NVIDIA runtime refuses the container (nvidia-container-cli's words, as it says them);
    the check says why, from the image's NVIDIA_REQUIRE_CUDA and the driver's header."""
    script = container_script("spark-duo", "spark-5be3", "vllm-qwen35")
    env = CUDA_13_IMAGE_ENV.replace("cuda>=13.0", "cuda>=13.1")
    refusal = ("docker: Error response from daemon: failed to create task for container: OCI runtime create "
               "failed: nvidia-container-cli: requirement error: unsatisfied condition: cuda>=13.1, please update "
               "your driver to a newer version, or use an earlier cuda container: unknown.\n")
    code, said, _ = run_container_check(tmp_path, script, listing=refusal, rc=125, image_env=env)
    assert code == 1
    assert "image vllm-qwen35 requires cuda>=13.1 (its NVIDIA_REQUIRE_CUDA)" in said
    assert "the driver on spark-5be3 supports CUDA 13.0" in said
    assert "fix: install an NVIDIA driver for that CUDA on spark-5be3, or use an image built for CUDA 13.0" in said
    assert "nothing was stopped" in said


def test_a_hung_container_is_bounded(tmp_path):
    script = container_script("rtxpro-quad-docker", "llm-server", "sglang-cu13")
    assert "bound=120\n" in script
    code, said, _ = run_container_check(tmp_path, script, listing="", sleep=True)
    assert code == 1 and "did not finish in 1 s" in said


# ---------------------------------------------------------------------------------------------
# Ray's memory monitor on unified memory


def test_ray_units_on_gb10_turn_the_memory_monitor_off_and_elsewhere_keep_rays_defaults():
    s = snap("spark-duo")
    for name in ("qwen35-ray-head-spark-1a32-install", "qwen35-ray-worker-spark-5be3-install"):
        text = script_of(s.by_name(name))
        assert "RAY_memory_monitor_refresh_ms=0" in text and "RAY_memory_usage_threshold=0.98" in text
    # Elsewhere (the lab's cpu nodes, as a Ray cluster): Ray's own defaults.
    from components.resources.cluster import ray_memory_monitor
    from components.config.schema import RaySpec
    assert ray_memory_monitor(RaySpec(), snap("lab").spec.node("lab-2")) == {}


def test_ray_memory_monitor_is_configurable():
    from components.resources.cluster import ray_memory_monitor
    from components.config.schema import RaySpec
    gb10 = snap("spark-duo").spec.node("spark-1a32")
    assert ray_memory_monitor(RaySpec(unified_memory_monitor_refresh_ms=500, unified_memory_usage_threshold=0.99),
                              gb10) == {"RAY_memory_monitor_refresh_ms": "500", "RAY_memory_usage_threshold": "0.99"}
    assert ray_memory_monitor(RaySpec(), snap("lab").spec.node("lab-1")) == {}
