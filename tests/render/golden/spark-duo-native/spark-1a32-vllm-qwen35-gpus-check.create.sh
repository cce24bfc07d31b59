#!/usr/bin/env bash
# Preflight, before any unit is stopped, read-only: a container of the engine image, started
# with --gpus all as the engine's is, lists the GPUs of this node (the NVIDIA container toolkit
# works with this Docker). Bounded: a hung runtime hook fails the check, not the up.
# An image built on NVIDIA's CUDA images declares the CUDA it needs (NVIDIA_REQUIRE_CUDA), which
# the NVIDIA runtime enforces when it starts the container: so this also checks the driver
# against the image itself, without images[].min_cuda (said in the log; explained on failure).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'preflight container gpus' "$*" >&2; }
node=spark-1a32
key='nodes[0]'
image=vllm-qwen35
tag=hellohal2064/vllm-qwen3.5-gb10:latest
count=1
bound=120
fail() { log "node $node: $*; nothing was stopped"; exit 1; }
fix="fix: install the NVIDIA Container Toolkit on $node and register it with Docker (nvidia-ctk runtime configure --runtime=docker; systemctl restart docker)"
requires=$(timeout -k 5 30 docker image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$tag" 2>/dev/null \
  | sed -n 's/^NVIDIA_REQUIRE_CUDA=\([^ ]*\).*/\1/p' | head -n 1)
rc=0
out=$(timeout -k 10 "$bound" docker run --rm --gpus all --entrypoint nvidia-smi "$tag" -L 2>&1) || rc=$?
said=$(tr -s '\n' ' ' <<< "$out" | cut -c1-400)
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  fail "docker run --gpus all $tag nvidia-smi -L did not finish in $bound s; $fix"
fi
if [ "$rc" -ne 0 ] && grep -q 'unsatisfied condition: cuda' <<< "$out"; then
  driver_cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9.]*\).*/\1/p' | head -n 1)
  fail "image $image requires ${requires:-a newer CUDA} (its NVIDIA_REQUIRE_CUDA) and the driver on $node supports" \
       "CUDA ${driver_cuda:-?}, so the NVIDIA runtime refuses to start it ($said); fix: install an NVIDIA driver for" \
       "that CUDA on $node, or use an image built for CUDA ${driver_cuda:-the driver supports}"
fi
[ "$rc" -eq 0 ] || fail "a container of image $image ($tag) does not see the GPUs: docker run --gpus all ... nvidia-smi -L exits $rc: $said; $fix"
seen=$(grep -c '^GPU [0-9]' <<< "$out" || true)
if [ "$seen" -lt "$count" ]; then
  fail "a container of image $image sees $seen GPU(s) ($said), the host has $count ($key.gpu.count); $fix, and check NVIDIA_VISIBLE_DEVICES in the image"
fi
log "a container of image $image sees $seen GPU(s): $(grep '^GPU [0-9]' <<< "$out" | cut -d'(' -f1 | paste -sd ';' - | sed 's/;/; /g')"
log "image $image requires ${requires:-no CUDA version (no NVIDIA_REQUIRE_CUDA in its environment)}"
