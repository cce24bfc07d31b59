#!/usr/bin/env bash
# Remove our derived image tag from this node (the base image is the operator's: kept).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'image blackwell-serving/gateway-lab:0114de50785a' "$*" >&2; }
docker image rm blackwell-serving/gateway-lab:0114de50785a >/dev/null 2>&1 || true
log "removed"
