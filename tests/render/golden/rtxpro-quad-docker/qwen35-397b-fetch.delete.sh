#!/usr/bin/env bash
# Remove our cached copy of the model from this node.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'model qwen35-397b' "$*" >&2; }
rm -rf /var/lib/blackwell-serving/models/nvidia--Qwen3.5-397B-A17B-NVFP4--0000000000000000000000000000000000000000 /var/lib/blackwell-serving/models/.staging/nvidia--Qwen3.5-397B-A17B-NVFP4--0000000000000000000000000000000000000000
log "removed from cache"
