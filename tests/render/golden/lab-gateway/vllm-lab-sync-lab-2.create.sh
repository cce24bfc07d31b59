#!/usr/bin/env bash
# Put the image on a peer over the fabric: skipped when the peer already has the same image ID;
# otherwise streamed once with docker save | ssh docker load, then checked by ID.
# Arguments of `peer` are quoted twice: once for this shell, once for the peer's.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'image blackwell-serving/vllm-lab:2b5ceeb6797a -> lab-2' "$*" >&2; }
progress_log=/var/log/blackwell-serving/image-blackwell-serving-vllm-lab-2b5ceeb6797a-lab-2.log
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
peer_known_hosts=$(mktemp)
trap 'rm -f "$peer_known_hosts"' EXIT
printf '%s %s\n' 198.19.0.12 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPRTDOYX0EbHaFlesNRb4u2zayIVA/2Yw/GedRwZ+NTm' > "$peer_known_hosts"
peer_ssh=(ssh -F /dev/null -i /root/.ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes
          -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$peer_known_hosts"
          -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 -o ServerAliveInterval=15
          -o ServerAliveCountMax=4 -o Compression=no -o LogLevel=ERROR)
peer() { "${peer_ssh[@]}" root@198.19.0.12 "$@"; }
want=$(docker image inspect --format '{{.Id}}' blackwell-serving/vllm-lab:2b5ceeb6797a)
have=$(peer docker image inspect --format ''"'"'{{.Id}}'"'"'' blackwell-serving/vllm-lab:2b5ceeb6797a 2>/dev/null || true)
had=$have
if [ "$have" = "$want" ]; then
  log "already there ($want)"
  echo "image-id=$want"
  exit 0
fi
size=$(docker image inspect --format '{{.Size}}' blackwell-serving/vllm-lab:2b5ceeb6797a)
log "copying $((size / 1048576)) MiB over the fabric"
start=$(date +%s)
if command -v pv >/dev/null 2>&1; then
  { docker save blackwell-serving/vllm-lab:2b5ceeb6797a | pv -f -s "$size" -i 10 | peer docker load; } 2>&1 | progress
else
  docker save blackwell-serving/vllm-lab:2b5ceeb6797a | peer docker load 2>&1 | progress
fi
have=$(peer docker image inspect --format ''"'"'{{.Id}}'"'"'' blackwell-serving/vllm-lab:2b5ceeb6797a)
if [ "$have" != "$want" ]; then
  log "peer has $have after the copy, expected $want"
  exit 1
fi
log "copied in $(( $(date +%s) - start )) s"
if [ -n "$had" ]; then
  # The image this tag named before: gone unless something still uses it.
  peer docker image rm "$had" >/dev/null 2>&1 || true
fi
echo "image-id=$want"
