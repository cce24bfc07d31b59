"""The stack config schema: what an operator writes in stacks/Pulumi.<stack>.yaml.

Every field's description is the reference for stack files. Names that end up in unit names,
container names, paths or shell scripts are restricted to safe alphabets here; every other
string is quoted by the templates (see components/steps/render.py), so metacharacters can never
reach a shell unquoted.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
import struct
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, create_model, field_validator, model_validator

from components.config.fields import (
    EnvName,
    HealthSpec,
    MemoryReleaseSpec,
    HostName,
    ImageRef,
    LocalPath,
    Name,
    NetDev,
    NodePath,
    OneLine,
    SecretRef,
    Strict,
    UnitName,
    documented,
    plain_path,
)
from components.config.gateway import GatewaySpec
from components.config.monitoring import MonitoringSpec
from components.config.venv import VenvSpec, image_problems
from components.engines import ENGINES
from components.launches import Topology, launch_of
from components.names import PREFIX, engine_container, engine_unit
from components.platforms import KINDS, PLATFORMS

HOST_KEY = re.compile(r"^(ssh-ed25519|ecdsa-sha2-nistp(256|384|521)|ssh-rsa) [A-Za-z0-9+/]+={0,3}$")
GIT_SHA = re.compile(r"^[0-9a-f]{40}$")


def _key_blob_type(blob: str) -> str | None:
    """The key type an SSH public key blob names inside itself (None if it is not a blob)."""
    try:
        raw = base64.b64decode(blob, validate=True)
        (n,) = struct.unpack(">I", raw[:4])
        kind = raw[4:4 + n].decode("ascii")
    except (binascii.Error, struct.error, UnicodeDecodeError, ValueError):
        return None
    if len(raw) < 4 + n + 4 + 16:  # type, then at least one non-trivial key field
        return None
    return kind


class SshSpec(Strict):
    user: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")] = Field(
        "root", description="the login user on the node (root: the steps manage systemd units and Docker)")
    port: int = Field(22, ge=1, le=65535, description="the node's SSH port")
    private_key_path: LocalPath | None = Field(
        None, description="private key on the operator's machine; read at run time, kept as a Pulumi secret")
    private_key: SecretRef | None = Field(
        None, description="the private key as a secret reference instead of a path (a whole PEM file)")
    host_key: str = Field(description="the node's pinned SSH host public key: `ssh-keyscan -t ed25519 HOST`, "
                                      "the 'TYPE BASE64' part")
    connect_timeout_s: int = Field(10, ge=1, le=300, description="seconds to wait for the SSH connection")

    @field_validator("host_key")
    @classmethod
    def _host_key(cls, v: str) -> str:
        v = " ".join(v.split()[:2])
        if not HOST_KEY.fullmatch(v) or _key_blob_type(v.split()[1]) != v.split()[0]:
            raise ValueError("must be 'ssh-ed25519 AAAA…' with the key's own type and base64 blob; "
                             "fix: copy it from `ssh-keyscan -t ed25519 HOST`")
        return v

    @model_validator(mode="after")
    def _one_key(self):
        if self.private_key_path and self.private_key:
            raise ValueError("fix: give private_key_path or private_key, not both")
        return self


class GpuSpec(Strict):
    kind: Literal[KINDS] = Field(description="; ".join(f"{p.kind}: {p.title}" for p in PLATFORMS.values()))
    count: int = Field(1, ge=1, le=16, description="GPUs in the node (cpu: 1)")
    memory_gb: float = Field(description="usable memory per GPU in GB (GB10: ~120 of 128 unified; RTX PRO 6000: 96)",
                             gt=0, le=4096)


# An RDMA device for NCCL_IB_HCA, with an optional port: mlx5_0, rocep1s0f1, mlx5_0:1.
Hca = Annotated[str, Field(pattern=r"^[A-Za-z0-9_]+(:[0-9]+)?$")]


class NodeFabric(Strict):
    """This node's own names for the fabric, where they differ from the stack's fabric (a Spark
    re-cabled to the other port, a NIC enumerated under another name). Keys left out are the
    stack's; the rest of the fabric (MTU, prefix, peer key, disable_ib) is the stack's."""

    netdev: NetDev | None = Field(None, description="this node's fabric netdev (NCCL/GLOO/TP_SOCKET_IFNAME, "
                                                    "UCX_NET_DEVICES); absent: fabric.netdev")
    hcas: list[Hca] | None = Field(None, min_length=1,
                                   description="this node's RDMA HCAs (NCCL_IB_HCA): both PCIe twins of its "
                                               "port; absent: fabric.hcas")
    gid_index: int | None = Field(None, ge=0, le=255,
                                  description="this node's NCCL_IB_GID_INDEX (its RoCEv2 GID, `show_gids`); "
                                              "absent: fabric.gid_index")

    @model_validator(mode="after")
    def _something(self):
        if self.netdev is None and self.hcas is None and self.gid_index is None:
            raise ValueError("overrides nothing; fix: give netdev, hcas or gid_index, or remove it")
        if self.hcas is not None and len(set(self.hcas)) != len(self.hcas):
            raise ValueError("hcas: an HCA is listed twice; fix: list each HCA once")
        return self


class NodeSpec(Strict):
    name: Name = Field(description="the node's name in this stack (used in resource names)")
    host: HostName = Field(description="management host name or address the operator's machine reaches by SSH")
    ssh: SshSpec = Field(description="how the operator's machine logs in to the node")
    arch: Literal["arm64", "amd64"] = Field(description="CPU architecture (DGX Spark: arm64); images are built per arch")
    gpu: GpuSpec = Field(description="the node's accelerators")
    fabric_address: ipaddress.IPv4Address | None = Field(
        None, description="this node's address on the fabric (RoCE) network; required for multi-node")
    fabric: NodeFabric | None = Field(
        None, description="this node's own fabric names (netdev, hcas, gid_index) where they differ from the "
                          "stack's fabric; absent: the stack's")


class BandwidthCheck(Strict):
    """An all-reduce across the nodes of each multi-node deployment, in its engine image, before
    anything is stopped: NCCL when the deployment runs on GPUs (docker.gpus), gloo otherwise
    (the lab). The bus bandwidth becomes the stack output <deployment>_fabric_bus_gbps."""

    size_mb: int = Field(256, ge=1, le=8192, description="MiB of float32 reduced per all-reduce")
    iterations: int = Field(5, ge=1, le=100, description="timed all-reduces, after one warm-up")
    port: int = Field(29555, ge=1024, le=65535,
                      description="TCP port on the head's fabric address where the ranks meet (MASTER_PORT)")
    min_bus_gbps: float | None = Field(
        None, gt=0, le=100000, description="fail the preflight below this bus bandwidth, in Gbit/s (nccl-tests' busbw × 8); "
                                "absent: a floor derived from the fabric link speed the nodes report (a fraction of "
                                "the slowest one's, by backend: components/preflight/bandwidth.py), none on a link "
                                "that reports no speed")
    timeout_s: int | None = Field(
        None, ge=30, le=14000,
        description="hard bound on each rank (`timeout`, then killed): an all-reduce still running then, such as "
                    "an NCCL set-up that hangs on the wrong interface or RDMA device, fails the preflight with the "
                    "NCCL settings to check; absent: 300 s plus every transfer at 1 Gbit/s")


# The key a node uses to log in to its peers (node→node copies), also without a fabric section.
DEFAULT_PEER_KEY = "/root/.ssh/id_ed25519"
# Parallel rsync streams of a model copy between nodes: one SSH cipher runs on one core, so one
# stream fills only a fraction of a fast link; a few fill it without starving the node.
DEFAULT_COPY_STREAMS = 4


class LayerRegistry(Strict):
    """A Docker registry on the build node of each image copied to peers, bound to its loopback
    (no daemon's configuration changes: Docker treats 127.0.0.0/8 as insecure by default), that
    keeps the layers of the image the peers hold. An update then costs its new layers only:
    `docker push` uploads only what the registry lacks, and the copy sends only those layers, where
    `docker save` would export the whole image first. The peers' daemons never use it."""

    image: ImageRef = Field("registry:2.8.3", description="the registry's image (Distribution 2.x: serves the "
                                                          "registry API on port 5000, stores under /var/lib/registry)")
    port: int = Field(5055, ge=1024, le=65535, description="the registry's port on the build node's loopback "
                                                           "(127.0.0.1), unique on the node")
    storage: NodePath = Field("/var/lib/blackwell-serving/layer-registry",
                              description="where the registry keeps the layers on the build node (removed with it)")


class FabricSpec(Strict):
    netdev: NetDev = Field(description="the fabric network interface (ConnectX-7 netdev that is up)")
    hcas: list[Hca] = Field(
        default_factory=list, description="RDMA HCAs for NCCL_IB_HCA; list both PCIe twins of a port for full bandwidth")
    gid_index: int = Field(3, ge=0, le=255, description="NCCL_IB_GID_INDEX; 3 selects RoCEv2 on ConnectX")
    mtu: int = Field(9000, ge=1280, le=9216, description="the fabric netdev's MTU (jumbo frames: 9000)")
    prefix_len: int = Field(24, ge=8, le=30, description="prefix length of the fabric addresses")
    peer_key: NodePath = Field(DEFAULT_PEER_KEY,
                               description="key on each node that logs in to its peers over the fabric (node→node copies)")
    copy_streams: int = Field(DEFAULT_COPY_STREAMS, ge=1, le=64,
                              description="parallel rsync streams of a model copy between nodes (files spread over "
                                          "them by size; one SSH cipher per stream, each on a core of its own)")
    infiniband_device: bool = Field(True, description="pass /dev/infiniband and IPC_LOCK to engine containers")
    disable_ib: bool = Field(False, description="NCCL_IB_DISABLE=1: sockets only (no RDMA hardware, e.g. the lab)")
    bandwidth_check: BandwidthCheck | None = Field(
        None, description="measure the all-reduce bandwidth of each multi-node deployment before anything is "
                          "stopped; absent: not measured")
    layer_registry: LayerRegistry | None = Field(
        None, description="a registry on each build node that keeps the layers of its images, so that an update "
                          "copies only its new layers to the peers; absent: every copy starts from `docker save`")


class ImageSpec(Strict):
    name: Name = Field(description="the image's name in this stack (deployments refer to it)")
    runtime: Literal["docker", "venv"] = Field(
        "docker", description="docker: a container image (base + layer); venv: the engine installed into a Python venv "
                              "on each of nodes from a pinned source (venv:), run by its unit without Docker")
    venv: VenvSpec | None = Field(None, description="runtime venv: the recipe (components/config/venv.py)")
    base: ImageRef | None = Field(None, description="docker: the engine image to start from, as a registry pull reference")
    transformers: Annotated[str, Field(pattern=r"^(==|>=|<=|~=|>|<)?[0-9][0-9a-z.,<>=!*]*$")] | None = Field(
        None, description="pip version spec of the transformers upgrade layer, e.g. '>=5.2'")
    pip: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\[\],-]*(==|>=|<=|~=|>|<|!=)?[A-Za-z0-9.*,<>=!+-]*$")]] = Field(
        default_factory=list, description="other pip requirements of the layer, pinned")
    pip_ca_bundle: NodePath | None = Field(
        None, description="CA bundle on the build node for pip inside the build (TLS-inspecting proxies)")
    build_node: Name | None = Field(None, description="docker: the node that builds the image (its arch must match "
                                                       "the base image)")
    nodes: list[Name] = Field(description="every node that needs the image; docker: copied there over the fabric; "
                                          "venv: built on each")
    peers_pull_base: bool = Field(
        False, description="docker: the other nodes pull `base` from its registry beside the build, so the copy over "
                           "the fabric carries only the layer built on it (for a registry close to the nodes, e.g. a "
                           "local mirror: faster than copying the whole image); a pull that fails leaves the whole "
                           "copy to the fabric")
    min_cuda: Annotated[str, Field(pattern=r"^[0-9]{1,2}\.[0-9]{1,2}$")] | None = Field(
        None, description="the CUDA version the engine was built for (its torch's torch.version.cuda, e.g. '13.0'): "
                          "the preflight fails on a node whose driver supports less (the 'CUDA Version' of "
                          "nvidia-smi's header), before anything is stopped; absent: the driver's version only reported")

    @model_validator(mode="after")
    def _runtime(self):
        if problems := image_problems(self):
            raise ValueError("\n".join(problems))
        return self


class ModelSource(Strict):
    kind: Literal["hub", "local", "node"] = Field(
        description="hub: Hugging Face download on fetch_node; local: a directory on the operator's machine; "
                    "node: already on fetch_node at path")
    path: LocalPath | None = Field(
        None, description="local: directory on the operator's machine; node: path on fetch_node")
    endpoint: Annotated[str, Field(pattern=r"^https?://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]{0,512})?$")] | None = Field(
        None, description="hub: the Hub's address when it is not https://huggingface.co (a mirror or an in-house "
                          "proxy), given to the downloader as HF_ENDPOINT")
    downloader_image: ImageRef | None = Field(
        None, description="hub: an image with python3 and huggingface_hub that runs the download (pulled on "
                          "fetch_node); absent: the image of the first deployment that serves the model, or its "
                          "venv's python (an engine image without them, e.g. llama.cpp's, is refused before the "
                          "download starts)")

    @model_validator(mode="after")
    def _endpoint_for_hub(self):
        for key in ("endpoint", "downloader_image"):
            if getattr(self, key) and self.kind != "hub":
                raise ValueError(f"{key}: only a hub source takes source.{key} (this one is '{self.kind}'); "
                                 f"fix: remove source.{key}")
        return self


class ModelSpec(Strict):
    name: Name = Field(description="the model's name in this stack (deployments refer to it)")
    repo: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")] = Field(
        description="Hugging Face repo id, OWNER/NAME (names the cache directory for every source kind)")
    revision: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")] = Field(
        description="for the hub: the 40-hex commit to pin (huggingface_hub.model_info(repo).sha); "
                    "otherwise a label of the content")
    source: ModelSource = Field(ModelSource(kind="hub"), description="where the weights come from")
    cache_dir: NodePath = Field("/var/lib/blackwell-serving/models",
                                description="directory on every node that holds the model caches")
    fetch_node: Name = Field(description="the node that downloads (or receives) the weights first")
    nodes: list[Name] = Field(description="every node that needs the weights; they are copied there over the fabric")
    hf_token: SecretRef | None = Field(None, description="Hugging Face token for gated repos (a secret reference)")

    @model_validator(mode="after")
    def _pinned(self):
        if ".." in self.repo:
            raise ValueError("repo: '..' is not allowed in a repo id; fix: write the Hugging Face id OWNER/NAME")
        if self.source.kind == "hub" and not GIT_SHA.fullmatch(self.revision):
            raise ValueError("revision: a hub model must be pinned to a 40-hex commit; "
                             "fix: use huggingface_hub.model_info(repo).sha")
        if self.source.kind != "hub" and not self.source.path:
            raise ValueError(f"source.path: required for source kind '{self.source.kind}'; fix: add source.path")
        if self.source.kind == "node" and not re.fullmatch(r"/[A-Za-z0-9._/-]*", self.source.path or ""):
            raise ValueError("source.path: must be an absolute path of [A-Za-z0-9._/-]; fix: move or link the "
                             "directory to such a path on the node")
        return self


class DockerRun(Strict):
    """Options of `docker run` for engine and Ray containers (defaults from the public recipes)."""

    shm_size: Annotated[str, Field(pattern=r"^[0-9]{1,12}[bkmg]?$")] = Field(
        "32g", description="--shm-size (NCCL and the engine's shared-memory queues)")
    ipc_host: bool = Field(True, description="--ipc host (else a private IPC namespace with shm_size of /dev/shm)")
    gpus: bool = Field(True, description="--gpus all (false: CPU engines, the lab)")
    init: bool = Field(True, description="an init process reaps zombie Ray workers")
    memlock_unlimited: bool = Field(True, description="--ulimit memlock=-1 (RDMA registers pinned memory)")
    mounts: list[Annotated[str, Field(pattern=r"^/[A-Za-z0-9._/-]*:/[A-Za-z0-9._/-]*(:ro)?$", max_length=1024),
                           AfterValidator(plain_path)]] = Field(
        default_factory=list, description="extra bind mounts HOST:CONTAINER[:ro]")


class RaySpec(Strict):
    port: int = Field(6379, ge=1, le=65535, description="the Ray head's GCS port on its fabric address")
    object_store_gb: float = Field(4.0, gt=0, le=4096,
                                   description="kept small: the object store competes with weights on unified memory")
    dashboard: bool = Field(False, description="start Ray's dashboard on the head (port 8265)")
    join_timeout_s: int = Field(300, ge=10, le=3600, description="how long to wait for every node to join the cluster")
    # Ray's memory monitor (docs.ray.io, "Out-Of-Memory Prevention") kills a worker when the node's
    # memory in use exceeds RAY_memory_usage_threshold (default 0.95) of its total, checked every
    # RAY_memory_monitor_refresh_ms (default 250; 0 disables it). On unified memory (GB10) the
    # engine's GPU allocations are host memory, so the planned reservation (memory_fraction of
    # the node, the object store, a kept embeddings server) already reads as ~0.9 or more in
    # use; a kill there takes a tensor-parallel rank and with it the whole deployment. The
    # preflight has checked the fit against MemAvailable, and the kernel's OOM killer with the
    # unit's Restart= stays: so by default the monitor is off on unified-memory nodes, and the
    # threshold, for whoever turns it back on, is above the planned reservation.
    unified_memory_monitor_refresh_ms: int = Field(
        0, ge=0, le=60000,
        description="RAY_memory_monitor_refresh_ms on nodes whose GPU shares the host's memory (gpu.kind gb10): "
                    "0 turns Ray's memory monitor off there (it counts the engine's GPU memory as host memory); "
                    "Ray's own default is 250. Other nodes keep Ray's defaults")
    unified_memory_usage_threshold: float = Field(
        0.98, gt=0, le=1,
        description="RAY_memory_usage_threshold on those nodes: the fraction of the node's memory in use above "
                    "which Ray's monitor kills a worker, when unified_memory_monitor_refresh_ms is not 0 "
                    "(Ray's default 0.95 is below what the engine reserves on unified memory)")


class WatchdogSpec(Strict):
    """A timer on the head sends a real completion every interval_s; after `failures` failures in a
    row it restarts the deployment's units (Ray head, then the engine; workers rejoin by themselves)."""
    enabled: bool = Field(True, description="watch the deployment once its health gate passed")
    interval_s: int = Field(30, ge=5, le=3600, description="seconds between two checks")
    failures: int = Field(3, ge=1, le=100, description="failed checks in a row that restart the deployment")
    timeout_s: int = Field(30, ge=1, le=600, description="how long one check waits for its completion")


class BenchmarkSpec(Strict):
    """A throughput measurement on the head after the health gate (components/resources/benchmark.py): the
    real endpoint on loopback, a fixed prompt set, streamed; run again when the engine changes."""

    enabled: bool = Field(True, description="measure after the health gate (false: no benchmark step)")
    prompts: int = Field(4, ge=1, le=64, description="requests sent one at a time for the single-stream figures, "
                                                     "taken in turn from the prompt set")
    prompt_set: list[Annotated[OneLine, Field(min_length=1, max_length=2000)]] = Field(
        default_factory=list, max_length=64,
        description="the fixed prompts (empty: the benchmark's own eight, templates/scripts/benchmark_engine.py)")
    max_tokens: int = Field(128, ge=2, le=8192,
                            description="tokens generated per request (the end of text ignored, so every request "
                                        "decodes this many)")
    concurrency: int = Field(4, ge=1, le=256, description="requests in flight for the aggregate tok/s")
    min_decode_tok_s: float | None = Field(
        None, gt=0, le=100000, description="a floor on single-stream decode tok/s: below it `up` fails with the figures")
    timeout_s: int = Field(900, ge=30, le=14400, description="how long the whole measurement may take")


# The engines of the registry (components/engines): `engine:` selects one.
Engine = Literal[tuple(ENGINES)]


class DeploymentKeys(Strict):
    """The keys every engine takes (DeploymentSpec adds each engine's own)."""

    name: Name = Field(description=f"the deployment's name: its unit is {engine_unit('NAME')}, its container "
                                  f"{engine_container('NAME')}")
    engine: Engine = Field(description="the engine that serves (components/engines: one module each)")
    image: Name = Field(description="an entry of images:")
    model: Name = Field(description="an entry of models:")
    nodes: list[Name] = Field(min_length=1, description="nodes it runs on; the first is the head")

    @property
    def engine_nodes(self) -> list[str]:
        """The nodes whose GPUs hold the engine's ranks."""
        return self.nodes[:1] if self.executor == "head" else list(self.nodes)

    @property
    def ranks_span_nodes(self) -> bool:
        """Its engine's ranks talk across the fabric (what the bandwidth check measures); a Ray
        cluster whose engine runs on its head alone (executor: head) does not."""
        return len(self.engine_nodes) > 1
    topology: Topology = Field(
        "single", description="single node; vLLM over a Ray cluster; or the engine's own multi-node launch "
                              "without Ray (SGLang --nnodes/--node-rank/--dist-init-addr; vLLM --nnodes/--node-rank/"
                              "--master-addr/--master-port, the other ranks --headless)")
    executor: Literal["ray", "head"] = Field(
        "ray", description="topology ray only: 'ray' spreads the engine over the cluster "
                           "(--distributed-executor-backend ray); 'head' keeps the cluster spanning every node "
                           "but runs the engine on the head's GPUs alone (engines whose platform cannot use Ray, "
                           "e.g. vLLM's CPU build)")
    tensor_parallel: int = Field(1, ge=1, le=64, description="tensor parallel size; × pipeline_parallel = the GPUs")
    pipeline_parallel: int = Field(1, ge=1, le=64, description="pipeline parallel size")
    port: int = Field(8000, ge=1, le=65535,
                      description="the OpenAI-compatible API's port on the head (1024 or above, unique on the node)")
    bind: ipaddress.IPv4Address = Field(ipaddress.IPv4Address("0.0.0.0"), description="the API's listen address")
    served_name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$")] = Field(
        description="the model name clients send (--served-model-name)")
    api_key: SecretRef | None = Field(
        None, description="the API key clients must send (a secret reference; never in env or extra_args)")
    tool_call_parser: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")] | None = Field(
        None, description="the engine's tool-call parser (e.g. qwen3_coder)")
    reasoning_parser: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")] | None = Field(
        None, description="the engine's reasoning parser (e.g. qwen3)")
    quantization: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")] | None = Field(
        None, description="--quantization (e.g. modelopt_fp4); absent: from the model's config")
    memory_fraction: float = Field(0.8, gt=0.05, le=0.95, description=(
        "the share of each GPU's memory the engine sizes weights, KV cache and buffers against: "
        + "; ".join(f"{e.name} {e.memory_fraction_flag}" for e in ENGINES.values() if e.memory_fraction_flag)
        + "".join(f"; {e.name} takes none ({e.memory_sized_by})" for e in ENGINES.values()
                  if not e.memory_fraction_flag)))
    max_model_len: int = Field(32768, ge=16, le=16_777_216, description="the longest context in tokens")
    max_num_seqs: int | None = Field(None, ge=1, le=65536, description="the most sequences in one batch")
    kv_cache_dtype: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,32}$")] = Field(
        "auto", description="the KV cache's dtype, in the engine's own spelling: " + "; ".join(
            f"{e.name} {', '.join(e.kv_cache_dtypes)}" for e in ENGINES.values()))
    dist_port: int = Field(20000, ge=1, le=65535,
                           description="native topology: the ranks' rendezvous port on the head's fabric address "
                                       "(SGLang --dist-init-addr, vLLM --master-port)")
    extra_args: list[Annotated[OneLine, Field(max_length=512)]] = Field(
        default_factory=list, description="more engine arguments, appended as given (no secrets: use api_key)")
    env: dict[EnvName, Annotated[OneLine, Field(max_length=4096)]] = Field(
        default_factory=dict, description="more environment of the engine container (no secrets: they would sit in "
                                          "the unit in plain text)")
    docker: DockerRun = Field(DockerRun(), description="options of the engine's and Ray's `docker run`")
    health: HealthSpec = Field(HealthSpec(), description="the health gate: a real chat completion after start")
    memory_release: MemoryReleaseSpec = Field(MemoryReleaseSpec(), description="a swap starts the new engine only "
                                              "once the old one's memory is back")
    watchdog: WatchdogSpec = Field(WatchdogSpec(), description="the watchdog: real completions on a timer, a restart "
                                                               "when it stops answering (a wedged engine)")
    benchmark: BenchmarkSpec = Field(BenchmarkSpec(), description="the benchmark after the health gate: decode "
                                     "tok/s, time to first token and aggregate tok/s, as stack outputs")
    drop_page_cache: bool = Field(False, description="drop the page cache before loading (unified memory)")

    @model_validator(mode="after")
    def _layout(self):
        problem = (launch_of(self).layout_problem(self) or ENGINES[self.engine].layout_problem(self)
                   or ENGINES[self.engine].memory_problem(self))
        if problem:
            raise ValueError(problem)
        if len(set(self.nodes)) != len(self.nodes):
            raise ValueError("nodes: a node is listed twice; fix: list each node once")
        if self.benchmark.enabled and self.benchmark.max_tokens >= self.max_model_len:
            raise ValueError(f"benchmark.max_tokens: {self.benchmark.max_tokens} does not fit in max_model_len "
                             f"{self.max_model_len} with a prompt; fix: lower benchmark.max_tokens")
        # Options of one engine would be dropped silently by the other's command line.
        for engine, key in ((e, key) for e in ENGINES.values() for key in sorted(e.options)):
            if getattr(self, key) is not None and key not in ENGINES[self.engine].options:
                raise ValueError(f"{key}: is an option of {engine.name}, not {self.engine}; fix: remove it "
                                 f"(or pass the engine's own flag in extra_args)")
        return self


# A deployment: the common keys, then each engine's own (Engine.Options, defined in the engine's
# module: a new engine's keys need no line here; DeploymentKeys._layout refuses them on another
# engine's deployment).
DeploymentSpec = create_model(
    "DeploymentSpec", __base__=DeploymentKeys, __module__=__name__, __doc__=None,
    **{key: (field.annotation, field) for e in ENGINES.values() for key, field in e.Options.model_fields.items()})


@documented(f"A foreign systemd unit on one of the nodes (never one of ours, {PREFIX}*).")
class ServiceRef(Strict):

    node: Name = Field(description="the node the unit runs on")
    unit: UnitName = Field(description="the systemd unit, with its suffix (e.g. glm.service)")

    @field_validator("unit", mode="before")
    @classmethod
    def _not_ours(cls, v):
        if isinstance(v, str) and v.startswith(PREFIX):
            raise ValueError(f"{PREFIX}* units are this project's own; fix: remove it (a deployment's unit is "
                             "managed through deployments:)")
        return v


# Units whose loss cuts the node off or stops everything on it: never retired.
PROTECTED_UNITS = ("ssh", "sshd", "docker", "containerd", "dbus")


def protected_unit(unit: str) -> bool:
    """A unit that keeps the node reachable or runs the containers: ssh, sshd, docker, containerd,
    dbus, systemd-* (with any instance or suffix)."""
    base = re.split(r"[.@]", unit, maxsplit=1)[0]
    return base in PROTECTED_UNITS or base.startswith("systemd-")


class RetireRef(ServiceRef):
    """A foreign unit to stop and disable before serving, started again on destroy. Never one that
    keeps the node reachable or runs the containers: ssh, sshd, docker, containerd, dbus, systemd-*."""

    @field_validator("unit", mode="before")
    @classmethod
    def _retirable(cls, v):
        if isinstance(v, str) and protected_unit(v):
            raise ValueError(f"{v[:130]!r} keeps the node reachable or runs our containers and cannot be retired; "
                             f"fix: remove it from retire")
        return v


class StackSpec(Strict):
    """The whole stack config: keys under `blackwell-serving:` in stacks/Pulumi.<stack>.yaml."""

    nodes: list[NodeSpec] = Field(min_length=1, description="the machines of this stack")
    fabric: FabricSpec | None = Field(None, description="the RoCE fabric between the nodes (required for multi-node)")
    images: list[ImageSpec] = Field(default_factory=list, description="engine images to build and place on nodes")
    models: list[ModelSpec] = Field(default_factory=list, description="model weights to cache on nodes")
    deployments: list[DeploymentSpec] = Field(default_factory=list, description="the engines that serve")
    retire: list[RetireRef] = Field(default_factory=list, description="foreign units stopped before serving, restored on destroy")
    keep: list[ServiceRef] = Field(default_factory=list, description="foreign units that must stay up and are never touched")
    ray: RaySpec = Field(RaySpec(), description="the Ray clusters of topology 'ray' deployments")
    gateway: GatewaySpec | None = Field(None, description="one OpenAI-compatible endpoint (LiteLLM's proxy) routing "
                                        "to every deployment and to external upstreams; absent: none")
    monitoring: MonitoringSpec | None = Field(None, description="Prometheus on one node and a node_exporter on "
                                              "every node, with the stack's rules; absent: none")
    state_dir: NodePath = Field("/var/lib/blackwell-serving", description="where we keep our records on each node")
    offline: bool = Field(False, description="never open a connection to a node (previews in CI of hardware stacks)")
    rollback: Literal["auto", "off"] = Field(
        "auto", description="auto: an `up` that fails after it began to change what serves puts back every service it "
                            "stopped and every unit it started or changed, in the same run; off: leave the nodes as the "
                            "failure left them (debugging)")

    def node(self, name: str) -> NodeSpec:
        return next(n for n in self.nodes if n.name == name)

    def image(self, name: str) -> ImageSpec:
        return next(i for i in self.images if i.name == name)

    def model(self, name: str) -> ModelSpec:
        return next(m for m in self.models if m.name == name)

    def layer_registry_nodes(self) -> list[str]:
        """The nodes that run a layer registry (fabric.layer_registry): the build nodes of the
        docker images copied to other nodes."""
        if self.fabric is None or self.fabric.layer_registry is None:
            return []
        return list(dict.fromkeys(i.build_node for i in self.images
                                  if i.runtime == "docker" and any(n != i.build_node for n in i.nodes)))
