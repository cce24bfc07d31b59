#!/usr/bin/env bash
# Stop and disable a unit that is not ours, after recording how it was, so that destroy can put
# it back. The first record wins: a re-run never overwrites the original state.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'retire vllm-reranker.service' "$*" >&2; }
record=/var/lib/blackwell-serving/retired/vllm-reranker.service.state
install -d -m 0755 "$(dirname "$record")"
if [ ! -e "$record" ]; then
  load=$(systemctl show -p LoadState --value vllm-reranker.service)
  if [ "$load" = "not-found" ]; then
    log "not installed on this node; nothing to stop"
    printf 'active=absent\nenabled=absent\n' > "$record.tmp"
  else
    active=$(systemctl is-active vllm-reranker.service || true)
    enabled=$(systemctl is-enabled vllm-reranker.service 2>/dev/null || true)
    printf 'active=%s\nenabled=%s\n' "$active" "$enabled" > "$record.tmp"
  fi
  mv -f "$record.tmp" "$record"
fi
if [ "$(systemctl show -p LoadState --value vllm-reranker.service)" != "not-found" ]; then
  systemctl disable --now vllm-reranker.service >/dev/null 2>&1
  log "stopped and disabled (was: $(tr '\n' ' ' < "$record"))"
fi
