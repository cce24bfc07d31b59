#!/usr/bin/env bash
# A unit that must stay up and that we never touch: only look.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'keep vllm-embeddings.service' "$*" >&2; }
if ! systemctl is-active --quiet vllm-embeddings.service; then
  log "expected to be running, found '$(systemctl is-active vllm-embeddings.service || true)'; start it, or remove it from keep:"
  exit 1
fi
log "running (pid $(systemctl show -p MainPID --value vllm-embeddings.service)); not touched"
