#!/usr/bin/env bash
# Remove our cached copy of the model from a peer.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'model qwen35-122b -> spark-5be3' "$*" >&2; }
peer_known_hosts=$(mktemp)
trap 'rm -f "$peer_known_hosts"' EXIT
printf '%s %s\n' 192.168.200.13 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ3rWm2yq0G7w8s0c6XbQf7l0p2F7m9m4TtQ8VbAzg2B' > "$peer_known_hosts"
peer_ssh=(ssh -F /dev/null -i /root/.ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes
          -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$peer_known_hosts"
          -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 -o ServerAliveInterval=15
          -o ServerAliveCountMax=4 -o Compression=no -o LogLevel=ERROR)
peer() { "${peer_ssh[@]}" root@192.168.200.13 "$@"; }
peer rm -rf /var/lib/blackwell-serving/models/Qwen--Qwen3.5-122B-A10B-FP8--0000000000000000000000000000000000000000 /var/lib/blackwell-serving/models/.staging/Qwen--Qwen3.5-122B-A10B-FP8--0000000000000000000000000000000000000000
log "removed from peer"
