#!/usr/bin/env bash
# Wait until every node of the Ray cluster has joined (bounded), as seen from the head.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'ray tiny-ray' "$*" >&2; }
deadline=$(( $(date +%s) + 300 ))
probe='import ray; ray.init(address="auto", logging_level="ERROR"); print(sum(1 for n in ray.nodes() if n["Alive"]))'
while :; do
  alive=$(docker exec bws-tiny-ray-head python3 -c "$probe" 2>/dev/null | tail -n 1 || true)
  if [ "$alive" = 2 ]; then
    log "2 of 2 nodes joined"
    echo "ray-nodes=$alive"
    exit 0
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    log "only ${alive:-0} of 2 nodes joined after 300 s; check the worker units and the fabric"
    exit 1
  fi
  log "${alive:-0} of 2 nodes joined; waiting"
  sleep 5
done
