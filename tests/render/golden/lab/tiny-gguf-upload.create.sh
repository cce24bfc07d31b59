#!/usr/bin/env bash
# On the operator's machine: send a local directory to a node's staging directory with rsync
# over SSH (the node's host key pinned, no user ssh config, bounded waits). Resumable: files
# already sent are kept (--partial), and files the node already holds in its installed copy are
# copied there instead of sent (--copy-dest). The key, when the stack gives one, arrives on
# stdin and is held by an ssh-agent of this run only: in memory, never in a file; the agent's
# command reads a pipe from this script, so it ends when the script does, however it ends.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'tiny-gguf-upload on lab-1' "$*" >&2; bws_said+=("$*"); }
progress_log=/tmp/blackwell-serving-tiny-gguf-upload-on-lab-1.log
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
bws_cleanup=""
trap() {
  if [ "$#" -eq 2 ] && [ "$2" = EXIT ]; then
    bws_cleanup=$1
    builtin trap bws_exit EXIT
  else
    # shellcheck disable=SC2064 # the caller's words, as the caller quoted them
    builtin trap "$@"
  fi
}
bws_failed_command=""
set -o errtrace
trap 'bws_failed_command=$BASH_COMMAND' ERR
# In a step, its timeout's TERM ends the script through the block (outside one, as before).
[ -z "${BWS_DOING:-}" ] || trap 'exit 143' TERM
trap : EXIT
# The log file is appended to by every run: this run's lines are those after its present size.
bws_log_from=1
if [ -n "${progress_log:-}" ] && [ -f "$progress_log" ]; then
  bws_log_from=$(($(stat -c %s "$progress_log") + 1))
fi
bws_log_tail() {
  [ -z "${progress_log:-}" ] || tail -c "+$bws_log_from" "$progress_log" 2>/dev/null | tail -c 8000 | tr '\r' '\n' |
    grep -v '^[[:space:]]*$' || true
}
bws_missing() {
  # The command a status 127 did not find: named by bash in the log, or the failed command's first word.
  local c
  for c in $(bws_log_tail | sed -n 's/^.*: \([^ :]*\): command not found$/\1/p' | tail -n 3
             printf '%s\n' "${bws_failed_command%% *}"); do
    command -v "$c" >/dev/null 2>&1 || { printf '%s\n' "$c"; return 0; }
  done
}
bws_exit() {
  local rc=$? missing="" package="" meaning=""
  set +e +o errtrace
  builtin trap - ERR
  eval "$bws_cleanup"
  # Once per step: not for a subshell's own exit, nor outside a step.
  [ "$rc" -ne 0 ] && [ -n "${BWS_DOING:-}" ] && [ "$BASHPID" = "$$" ] || return 0
  case $rc in
    127) missing=$(bws_missing); meaning="a command was not found${missing:+: $missing}" ;;
    126) meaning="a command could not be run (not executable)" ;;
    143) meaning="ended by SIGTERM: the step's timeout, or the run was stopped" ;;
    *) meaning="${bws_failed_command:+the command that failed: ${bws_failed_command:0:160}}" ;;
  esac
  if [ -n "$missing" ] && [ -f scripts/host-packages.txt ]; then
    package=$(awk -v c="$missing" '{ sub(/#.*/, "") } { for (i = 2; i <= NF; i++) if ($i == c) { print $1; exit } }' scripts/host-packages.txt)
  fi
  printf '\n%s\n' "FAILED: $BWS_DOING"
  printf '  node:   %s (this step runs on the operator'"'"'s machine)\n' "${BWS_NODE:-?}"
  printf '  status: exit %s%s\n' "$rc" "${meaning:+ ($meaning)}"
  # Its last words: the script's own reason, often with its fix (not where the log file is).
  local last=() line n=0
  for line in "${bws_said[@]}"; do
    case $line in "full output in "*) ;; *) last[n++]=$line ;; esac
  done
  for line in "${last[@]:$((n > 2 ? n - 2 : 0))}"; do
    printf '  said:   %s\n' "${line:0:400}"
  done
  local tail_lines
  tail_lines=$(bws_log_tail | tail -n 12 | cut -c1-300)
  if [ -n "$tail_lines" ]; then
    printf '  log:    last lines of %s\n' "$progress_log"
    printf '%s\n' "$tail_lines" | sed 's/^/    | /'
  fi
  if [ -n "$package" ]; then
    printf '  fix:    install the Debian package %s on this machine (apt-get install %s; it is in scripts/host-packages.txt, which bash scripts/setup-host.sh installs); then run pulumi up again\n' "$package" "$package"
  elif [ -n "$missing" ]; then
    printf '  fix:    install %s on %s (it is not on PATH there); then run pulumi up again\n' "$missing" \
      "this machine"
  fi
}
src=tests/lab/.state/tiny-gguf
if [ ! -d "$src" ]; then
  log "no directory $src on this machine (models[].source.path)"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%s %s\n' 198.18.0.11 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICEvWJmRmEloEL70S2jUEXoPj0Ob7rHWBDbvqcLgNdih' > "$tmp/known_hosts"
key=$(cat)
if [ -n "$key" ]; then
  # Not with the step's lock (fd 9, components/remote.command_line): the agent notices the end
  # of its command only within 10 s, and the next run of this step would wait for it.
  exec 3> >(exec ssh-agent -a "$tmp/agent.sock" cat >/dev/null 2>&1 9>&-)
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
  --rsync-path='mkdir -p /var/lib/blackwell-serving/models/.staging/blackwell-lab--tiny-llama-gguf--lab-v1 && rsync' \
  --copy-dest=/var/lib/blackwell-serving/models/blackwell-lab--tiny-llama-gguf--lab-v1 \
  "$src/" root@198.18.0.11:/var/lib/blackwell-serving/models/.staging/blackwell-lab--tiny-llama-gguf--lab-v1/ 2>&1 | progress
log "sent"
