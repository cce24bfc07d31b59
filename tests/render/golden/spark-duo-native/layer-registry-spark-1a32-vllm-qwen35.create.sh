#!/usr/bin/env bash
# Keep the layers of the image in the layer registry on this node (components/layer_registry.py),
# so that the next update's copies to peers push and send only its new layers (sync-image.sh.j2).
# It runs after every copy of the image: the first distribution never waits for this push. A
# push that fails is reported, not fatal: serving does not depend on it, and the next copy then
# starts from `docker save` as without the registry.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'layer registry bws/vllm-qwen35' "$*" >&2; }
progress_log=/var/log/blackwell-serving/layer-registry-bws-vllm-qwen35.log
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
layer_registry=127.0.0.1:5055
drop_layer_refs() {
  docker image ls --digests --format '{{.Repository}} {{.Tag}} {{.Digest}}' \
    | awk -v r="$layer_registry/$1" '$1 == r || index($1, r "/") == 1 {
        if ($2 != "<none>") print $1 ":" $2
        if ($3 != "<none>") print $1 "@" $3
      }' | xargs -r docker image rm >/dev/null 2>&1 || true
}
push_layers() {
  local id=${3#sha256:} rc=0
  docker tag "$1" "$layer_registry/$2:${id:0:12}" || return 1
  docker push "$layer_registry/$2:${id:0:12}" 2>&1 | progress || rc=$?
  drop_layer_refs "$2"
  return "$rc"
}
id=$(docker image inspect --format '{{.Id}}' hellohal2064/vllm-qwen3.5-gb10:latest)
if push_layers hellohal2064/vllm-qwen3.5-gb10:latest bws/vllm-qwen35 "$id"; then
  log "the layers of $id are in the registry"
else
  log "warning: the push to the layer registry failed: the next update of the image copies it from docker save"
fi
echo "image-id=$id"
