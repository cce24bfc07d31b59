#!/usr/bin/env bash
# Remove our derived image tag from this node (the base image is the operator's: kept).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'image blackwell-serving/sglang-cu13:6652dad398a1' "$*" >&2; }
docker image rm blackwell-serving/sglang-cu13:6652dad398a1 >/dev/null 2>&1 || true
log "removed"
