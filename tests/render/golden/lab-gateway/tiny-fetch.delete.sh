#!/usr/bin/env bash
# Remove our cached copy of the model from this node.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'model tiny' "$*" >&2; }
rm -rf /var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1 /var/lib/blackwell-serving/models/.staging/blackwell-lab--tiny-llama--lab-v1
log "removed from cache"
