#!/usr/bin/env bash
# Remove our cached copy of the model from a peer.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'model tiny -> lab-2' "$*" >&2; }
peer_known_hosts=$(mktemp)
trap 'rm -f "$peer_known_hosts"' EXIT
printf '%s %s\n' 198.19.0.12 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPRTDOYX0EbHaFlesNRb4u2zayIVA/2Yw/GedRwZ+NTm' > "$peer_known_hosts"
peer_ssh=(ssh -F /dev/null -i /root/.ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes
          -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$peer_known_hosts"
          -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 -o ServerAliveInterval=15
          -o ServerAliveCountMax=4 -o Compression=no -o LogLevel=ERROR)
peer() { "${peer_ssh[@]}" root@198.19.0.12 "$@"; }
peer rm -rf /var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1 /var/lib/blackwell-serving/models/.staging/blackwell-lab--tiny-llama--lab-v1
log "removed from peer"
