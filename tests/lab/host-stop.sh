#!/usr/bin/env bash
# Stop the host daemons the lab started from this cache root (tests/lab/lab down --daemons): the
# lab registry (tests/lab/engine/prepare.sh) and the Docker daemon whose data root is
# $BLACKWELL_CACHE/docker (tests/lab/host-docker.sh). A daemon someone else started (another data
# root) is left alone. Afterwards nothing holds a file under the cache root: it can be removed.
. "$(dirname "$0")/lib.sh"

registry_pid_file="$LAB_CACHE/registry-run/pid"
if pid=$(cat "$registry_pid_file" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; then
  log "host: stopping the lab registry (pid $pid)"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  rm -f "$registry_pid_file"
fi

docker info >/dev/null 2>&1 || exit 0
root=$(docker info --format '{{ .DockerRootDir }}')
if [[ $root != "$BLACKWELL_CACHE/docker" ]]; then
  log "host: the Docker daemon keeps its data in $root, not $BLACKWELL_CACHE/docker: not ours to stop"
  exit 0
fi
pid=$(cat /var/run/docker.pid 2>/dev/null || pgrep -o -x dockerd || true)
[[ -n $pid ]] || die "a Docker daemon answers but no pid was found (/var/run/docker.pid)"
log "host: stopping dockerd (pid $pid, data root $root)"
kill "$pid"
for _ in $(seq 120); do
  kill -0 "$pid" 2>/dev/null || { log "host: dockerd stopped"; exit 0; }
  sleep 0.5
done
die "dockerd (pid $pid) still runs 60 s after SIGTERM; see $LAB_CACHE/dockerd.log"
