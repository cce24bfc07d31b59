#!/usr/bin/env bash
# Remove our derived image tag from this node (the base image is the operator's: kept).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'image blackwell-serving/gateway-lab:cce61ba6524d' "$*" >&2; }
docker image rm blackwell-serving/gateway-lab:cce61ba6524d >/dev/null 2>&1 || true
log "removed"
