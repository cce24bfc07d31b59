#!/usr/bin/env bash
# Remove the EnvironmentFile of a unit we own (its unit is removed first: it depends on this).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'env bws-qwen35-sglang.service' "$*" >&2; }
rm -f /etc/blackwell-serving/qwen35-sglang.env /etc/blackwell-serving/qwen35-sglang.env.generation /etc/blackwell-serving/qwen35-sglang.env.tmp
log "removed"
