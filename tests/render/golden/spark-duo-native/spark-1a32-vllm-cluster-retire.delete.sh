#!/usr/bin/env bash
# Give a retired unit back as it was before we stopped it.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'restore vllm-cluster.service' "$*" >&2; }
record=/var/lib/blackwell-serving/retired/vllm-cluster.service.state
if [ ! -e "$record" ]; then
  log "no record of its earlier state; leaving it as it is"
  exit 0
fi
active=$(sed -n 's/^active=//p' "$record")
enabled=$(sed -n 's/^enabled=//p' "$record")
if [ "$enabled" = "enabled" ]; then systemctl enable vllm-cluster.service >/dev/null 2>&1; fi
# A unit started by hand while retired may have failed and hit its start limit: clear that first.
systemctl reset-failed vllm-cluster.service >/dev/null 2>&1 || true
if [ "$active" = "active" ]; then systemctl start vllm-cluster.service; fi
rm -f "$record"
log "restored (active=$active enabled=$enabled)"
