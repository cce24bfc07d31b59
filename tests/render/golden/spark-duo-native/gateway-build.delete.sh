#!/usr/bin/env bash
# Remove our derived image tag from this node (the base image is the operator's: kept).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'image blackwell-serving/gateway:c2860cdd73d4' "$*" >&2; }
docker image rm blackwell-serving/gateway:c2860cdd73d4 >/dev/null 2>&1 || true
log "removed"
