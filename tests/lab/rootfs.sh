#!/usr/bin/env bash
# Build the node root file system with debootstrap and import it as a Docker image.
# Cached: ${BLACKWELL_CACHE:-/var/cache/blackwell-serving}/lab/rootfs-<hash>.tar, and the
# image bws-lab-rootfs:<hash>. The hash covers this script (package list) and lab.env's
# LAB_SUITE and LAB_MIRROR.
# Prints the image reference on stdout.
. "$(dirname "$0")/lib.sh"

PACKAGES=(
  systemd systemd-sysv dbus
  openssh-server openssh-client
  docker.io iptables
  python3 iproute2 curl ca-certificates rsync
  procps iputils-ping
)

hash=$( { hash_files "$LAB_DIR/rootfs.sh"; echo "$LAB_SUITE $LAB_MIRROR"; } | sha256sum | cut -c1-16)
image="bws-lab-rootfs:$hash"
tarball="$LAB_CACHE/rootfs-$hash.tar"

if docker image inspect "$image" >/dev/null 2>&1; then
  log "rootfs: $image present"
  echo "$image"; exit 0
fi

if [[ ! -s $tarball ]]; then
  mkdir -p "$LAB_CACHE"
  work=$(mktemp -d "$LAB_CACHE/debootstrap.XXXXXX")
  trap 'rm -rf --one-file-system "$work"' EXIT
  log "rootfs: debootstrap $LAB_SUITE (${#PACKAGES[@]} packages + deps) -> $tarball"
  include=$(IFS=,; echo "${PACKAGES[*]}")
  debootstrap --variant=minbase --include="$include" \
    "$LAB_SUITE" "$work/root" "$LAB_MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
  # no package caches or lists in the image; host keys come per node (committed fixtures)
  rm -rf "$work/root"/var/cache/apt/archives/*.deb "$work/root"/var/lib/apt/lists/* \
    "$work/root"/etc/ssh/ssh_host_*
  tar -C "$work/root" --numeric-owner --xattrs -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
fi

log "rootfs: importing $tarball as $image"
docker import "$tarball" "$image" >/dev/null
echo "$image"
