#!/usr/bin/env bash
# Make sure the host has its Debian packages (scripts/setup-host.sh) and that a Docker daemon
# answers; start dockerd in the background (log: $LAB_CACHE/dockerd.log) when none does.
. "$(dirname "$0")/lib.sh"

"$REPO_ROOT/scripts/setup-host.sh"
"$REPO_ROOT/scripts/setup-python.sh"  # prepare.sh runs its Python tools from .venv

if docker info >/dev/null 2>&1; then
  # A daemon someone else started keeps its images elsewhere: say so, for a run meant to be cold.
  root=$(docker info --format '{{ .DockerRootDir }}' 2>/dev/null || true)
  if [[ $root != "$BLACKWELL_CACHE/docker" ]]; then
    log "host: the Docker daemon that answers keeps its images in ${root:-?}, not under BLACKWELL_CACHE ($BLACKWELL_CACHE/docker): its cached images are used; for a cold run stop it first (tests/lab/lab down --daemons)"
  fi
  exit 0
fi
mkdir -p "$LAB_CACHE"
# A daemon that died left its containers' network namespaces mounted here: those no process uses
# any more are released (their veths leave the lab's bridges with them; tests/lab/networks.sh
# prunes what a live one left).
for ns in /run/docker/netns/*; do
  [[ -e $ns ]] || continue
  inode=$(stat -L -c %i "$ns" 2>/dev/null) || continue
  used=
  for pns in /proc/[0-9]*/ns/net; do
    if [[ $(readlink "$pns" 2>/dev/null) == "net:[$inode]" ]]; then used=1; break; fi
  done
  if [[ -z $used ]]; then
    log "host: releasing $ns, a network namespace a dead Docker daemon left (no process in it)"
    umount "$ns" 2>/dev/null || true
    rm -f "$ns"
  fi
done
log "host: no Docker daemon answers; starting dockerd (log: $LAB_CACHE/dockerd.log)"
# the default bridge moves off 172.17/16: the lab uses only 198.18.0.0/15
# Its data root is under the cache root, so an empty BLACKWELL_CACHE means no image is cached.
detached dockerd --bip 198.18.254.1/24 --data-root "$BLACKWELL_CACHE/docker" \
  --default-address-pool base=198.19.64.0/18,size=24 \
  >>"$LAB_CACHE/dockerd.log" 2>&1 </dev/null
for _ in $(seq 60); do
  docker info >/dev/null 2>&1 && { log "host: dockerd is up (pid $!)"; exit 0; }
  kill -0 $! 2>/dev/null || break
  sleep 1
done
tail -n 20 "$LAB_CACHE/dockerd.log" >&2
die "dockerd did not come up"
