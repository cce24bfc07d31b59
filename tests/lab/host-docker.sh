#!/usr/bin/env bash
# Make sure the host has its Debian packages (scripts/setup-host.sh) and that a Docker daemon
# answers; start dockerd in the background (log: $LAB_CACHE/dockerd.log) when none does.
. "$(dirname "$0")/lib.sh"

"$REPO_ROOT/scripts/setup-host.sh"

if docker info >/dev/null 2>&1; then
  exit 0
fi
mkdir -p "$LAB_CACHE"
log "host: no Docker daemon answers; starting dockerd (log: $LAB_CACHE/dockerd.log)"
# the default bridge moves off 172.17/16: the lab uses only 198.18.0.0/15
detached dockerd --bip 198.18.254.1/24 \
  --default-address-pool base=198.19.64.0/18,size=24 \
  >>"$LAB_CACHE/dockerd.log" 2>&1 </dev/null
for _ in $(seq 60); do
  docker info >/dev/null 2>&1 && { log "host: dockerd is up (pid $!)"; exit 0; }
  kill -0 $! 2>/dev/null || break
  sleep 1
done
tail -n 20 "$LAB_CACHE/dockerd.log" >&2
die "dockerd did not come up"
