#!/usr/bin/env bash
# Remove the layer registry from this node: its container, any name a push left behind in the
# daemon, and the layers it kept.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'layer registry on spark-1a32' "$*" >&2; }
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
docker rm -f bws-layer-registry >/dev/null 2>&1 || true
drop_layer_refs bws
rm -rf /var/lib/blackwell-serving/layer-registry
log "removed"
