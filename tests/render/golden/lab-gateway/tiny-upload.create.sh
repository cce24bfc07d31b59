#!/usr/bin/env bash
# On the operator's machine: send a local directory to a node's staging directory with rsync
# over SSH (the node's host key pinned, no user ssh config, bounded waits). Resumable: files
# already sent are kept (--partial), and files the node already holds in its installed copy are
# copied there instead of sent (--copy-dest). The key, when the stack gives one, arrives on
# stdin and is held by an ssh-agent of this run only: in memory, never in a file; the agent's
# command reads a pipe from this script, so it ends when the script does, however it ends.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'tiny-upload on lab-1' "$*" >&2; }
progress_log=/tmp/blackwell-serving-tiny-upload-on-lab-1.log
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
src=tests/lab/.state/tiny-model
if [ ! -d "$src" ]; then
  log "no directory $src on this machine (models[].source.path)"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%s %s\n' 198.18.0.11 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICEvWJmRmEloEL70S2jUEXoPj0Ob7rHWBDbvqcLgNdih' > "$tmp/known_hosts"
key=$(cat)
if [ -n "$key" ]; then
  exec 3> >(exec ssh-agent -a "$tmp/agent.sock" cat >/dev/null 2>&1)
  export SSH_AUTH_SOCK="$tmp/agent.sock"
  for _ in $(seq 100); do [ -S "$SSH_AUTH_SOCK" ] && break; sleep 0.1; done
  printf '%s\n' "$key" | ssh-add -q - || { log "the stack's SSH key was refused by ssh-add"; exit 1; }
fi
unset key
ssh_opts=(ssh -F /dev/null -p 22 -o BatchMode=yes -o StrictHostKeyChecking=yes
          -o UserKnownHostsFile="$tmp/known_hosts" -o GlobalKnownHostsFile=/dev/null
          -o ConnectTimeout=10 -o ServerAliveInterval=15 -o ServerAliveCountMax=4
          -o LogLevel=ERROR)
rsh=$(printf "'%s' " "${ssh_opts[@]}")
log "sending $(du -sh "$src" | cut -f1) to" 198.18.0.11
rsync -a --delete --partial --info=progress2 --no-inc-recursive --timeout=300 -e "$rsh" \
  --rsync-path='mkdir -p /var/lib/blackwell-serving/models/.staging/blackwell-lab--tiny-llama--lab-v1 && rsync' \
  --copy-dest=/var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1 \
  "$src/" root@198.18.0.11:/var/lib/blackwell-serving/models/.staging/blackwell-lab--tiny-llama--lab-v1/ 2>&1 | progress
log "sent"
