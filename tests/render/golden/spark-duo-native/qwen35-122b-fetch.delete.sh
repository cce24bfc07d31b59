#!/usr/bin/env bash
# Remove our cached copy of the model from this node.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'model qwen35-122b' "$*" >&2; }
rm -rf /var/lib/blackwell-serving/models/Qwen--Qwen3.5-122B-A10B-FP8--0000000000000000000000000000000000000000 /var/lib/blackwell-serving/models/.staging/Qwen--Qwen3.5-122B-A10B-FP8--0000000000000000000000000000000000000000
log "removed from cache"
