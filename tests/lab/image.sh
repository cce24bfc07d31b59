#!/usr/bin/env bash
# Build the node image (node/Dockerfile) on top of the rootfs image; tag it with a hash of
# its inputs so that it is rebuilt only when they change. Prints the image reference.
. "$(dirname "$0")/lib.sh"

rootfs=$("$LAB_DIR/rootfs.sh")
mapfile -t inputs < <(find "$LAB_DIR/node/Dockerfile" "$LAB_DIR/node/files" -type f | LC_ALL=C sort)
hash=$( { echo "$rootfs"; hash_files "${inputs[@]}"; } | sha256sum | cut -c1-16)
image="$LAB_IMAGE_REPO:$hash"

if docker image inspect "$image" >/dev/null 2>&1; then
  log "image: $image present"
else
  log "image: building $image"
  docker build -q --build-arg ROOTFS="$rootfs" --label "bws.lab.rootfs=$rootfs" \
    -t "$image" -f "$LAB_DIR/node/Dockerfile" "$LAB_DIR/node" >/dev/null 2> >(grep -v -e DEPRECATED -e 'legacy builder' -e buildx -e '^ *$' >&2)
  # older node images go, unless a node still runs on one (it is recreated later)
  for old in $(docker images "$LAB_IMAGE_REPO" --format '{{.Repository}}:{{.Tag}}'); do
    [[ $old == "$image" ]] || docker rmi "$old" >/dev/null 2>&1 || true
  done
fi
echo "$image"
