#!/usr/bin/env bash
# Remove the image tag we copied to a peer, and anything a copy left staged there.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'image blackwell-serving/vllm-lab:2b5ceeb6797a -> lab-2' "$*" >&2; }
peer_known_hosts=$(mktemp)
trap 'rm -f "$peer_known_hosts"' EXIT
printf '%s %s\n' 198.19.0.12 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPRTDOYX0EbHaFlesNRb4u2zayIVA/2Yw/GedRwZ+NTm' > "$peer_known_hosts"
peer_ssh=(ssh -F /dev/null -i /root/.ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes
          -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$peer_known_hosts"
          -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 -o ServerAliveInterval=15
          -o ServerAliveCountMax=4 -o Compression=no -o LogLevel=ERROR)
peer() { "${peer_ssh[@]}" root@198.19.0.12 "$@"; }
peer docker image rm blackwell-serving/vllm-lab:2b5ceeb6797a >/dev/null 2>&1 || true
# What an interrupted copy staged there (sync-image.sh.j2 keeps one image's at a time).
peer rm -rf /var/lib/blackwell-serving/image-staging
log "removed from peer"
