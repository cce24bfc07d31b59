#!/usr/bin/env bash
# Remove the image tag we copied to a peer, and anything a copy left staged there.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'image hellohal2064/vllm-qwen3.5-gb10:latest -> spark-5be3' "$*" >&2; }
peer_known_hosts=$(mktemp)
trap 'rm -f "$peer_known_hosts"' EXIT
printf '%s %s\n' 192.168.200.13 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ3rWm2yq0G7w8s0c6XbQf7l0p2F7m9m4TtQ8VbAzg2B' > "$peer_known_hosts"
peer_ssh=(ssh -F /dev/null -i /root/.ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes
          -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$peer_known_hosts"
          -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 -o ServerAliveInterval=15
          -o ServerAliveCountMax=4 -o Compression=no -o LogLevel=ERROR)
peer() { "${peer_ssh[@]}" root@192.168.200.13 "$@"; }
peer docker image rm hellohal2064/vllm-qwen3.5-gb10:latest >/dev/null 2>&1 || true
# What an interrupted copy staged there (sync-image.sh.j2 keeps one image's at a time).
peer rm -rf /var/lib/blackwell-serving/image-staging
log "removed from peer"
