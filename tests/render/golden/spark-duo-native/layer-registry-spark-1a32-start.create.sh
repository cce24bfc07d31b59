#!/usr/bin/env bash
# Run the layer registry on this node (components/layer_registry.py): a registry container whose
# port is published on 127.0.0.1 only (Docker pushes there without any daemon configuration:
# 127.0.0.0/8 is an insecure registry by default), its layers on the node's disk, restarted with
# the daemon. Labelled with the digest of its configuration: the same one running is left alone,
# another one is replaced (the layers stay).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'layer registry on spark-1a32' "$*" >&2; }
progress_log=/var/log/blackwell-serving/layer-registry-on-spark-1a32.log
progress() {
  mkdir -p "$(dirname "$progress_log")"
  if [ -z "${progress_told:-}" ]; then
    progress_told=1
    log "full output in $progress_log"
  fi
  tee -a "$progress_log" | awk -v shown=-1 -v RS='[\r\n]+' '
    /^\[blackwell / { print; fflush(); next }
    match($0, /[0-9]+(\.[0-9]+)?%/) {
      p = substr($0, RSTART, RLENGTH - 1) + 0
      if (p <= 100 && int(p / 10) > shown) { shown = int(p / 10); print; fflush() }
      next
    }
    /^(Loaded image|#[0-9]+ \[|Step [0-9]+\/[0-9]+|Successfully (built|tagged))/ { print; fflush() }
  ' >&2
}
url=http://127.0.0.1:5055/v2/
answers() { curl -fsS --noproxy '*' --max-time 5 -o /dev/null "$url" 2>/dev/null; }
if [ "$(docker container inspect --format '{{ index .Config.Labels "org.blackwell-serving.config" }} {{ .State.Running }}' bws-layer-registry 2>/dev/null || true)" = '1800892a897c true' ]; then
  log "already running"
else
  docker image inspect registry:2.8.3 >/dev/null 2>&1 || docker pull registry:2.8.3 2>&1 | progress
  docker rm -f bws-layer-registry >/dev/null 2>&1 || true
  mkdir -p /var/lib/blackwell-serving/layer-registry
  docker run -d --name bws-layer-registry --restart unless-stopped \
    --label org.blackwell-serving.config=1800892a897c \
    -p 127.0.0.1:5055:5000 -v /var/lib/blackwell-serving/layer-registry:/var/lib/registry \
    -e REGISTRY_STORAGE_DELETE_ENABLED=true registry:2.8.3 >/dev/null
  log "started"
fi
deadline=$((SECONDS + 60))
until answers; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    log "no answer on $url after 60 s; the container's last lines:"
    docker logs --tail 20 bws-layer-registry >&2 || true
    exit 1
  fi
  sleep 1
done
log "answers on $url"
