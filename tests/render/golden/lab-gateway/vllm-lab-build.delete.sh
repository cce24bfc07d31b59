#!/usr/bin/env bash
# Remove our derived image tag from this node (the base image is the operator's: kept).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'image blackwell-serving/vllm-lab:2b5ceeb6797a' "$*" >&2; }
docker image rm blackwell-serving/vllm-lab:2b5ceeb6797a >/dev/null 2>&1 || true
log "removed"
