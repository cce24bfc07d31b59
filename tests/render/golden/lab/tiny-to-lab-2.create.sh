#!/usr/bin/env bash
# Copy the cached model to a peer over the fabric: skipped when the peer's manifest matches;
# otherwise rsync'd (resumable, the files spread over parallel streams) into the peer's staging
# directory, verified there against the manifest, then renamed into place. Arguments of `peer`
# are quoted twice (here, and there).
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'model tiny -> lab-2' "$*" >&2; bws_said+=("$*"); }
progress_log=/var/log/blackwell-serving/model-tiny-lab-2.log
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
  # The Debian package of each command this script names (templates/node-packages.txt; render.py).
  case $missing in
    awk) package=mawk ;;
    rsync) package=rsync ;;
    ssh) package=openssh-client ;;
    apt-get) package=apt ;;
    *) ;;
  esac
  printf '\n%s\n' "FAILED: $BWS_DOING"
  printf '  node:   %s\n' "${BWS_NODE:-?}"
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
    printf '  fix:    install the Debian package %s on %s (apt-get install %s); then run pulumi up again\n' "$package" "${BWS_NODE:-the node}" "$package"
  elif [ -n "$missing" ]; then
    printf '  fix:    install %s on %s (it is not on PATH there); then run pulumi up again\n' "$missing" \
      "${BWS_NODE:-the node}"
  fi
}
peer_known_hosts=$(mktemp)
trap 'rm -f "$peer_known_hosts"' EXIT
printf '%s %s\n' 198.19.0.12 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPRTDOYX0EbHaFlesNRb4u2zayIVA/2Yw/GedRwZ+NTm' > "$peer_known_hosts"
peer_ssh=(ssh -F /dev/null -i /root/.ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes
          -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$peer_known_hosts"
          -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 -o ServerAliveInterval=15
          -o ServerAliveCountMax=4 -o Compression=no -o LogLevel=ERROR)
peer() { "${peer_ssh[@]}" root@198.19.0.12 "$@"; }
cache_stat() {
  (cd "$1" && find . -type f ! -name '.blackwell-*' -printf '%s %T@ %P\n' \
     | awk '{ $2 = int($2); print }' | LC_ALL=C sort)
}
cache_intact() {
  [ -f "$1/.blackwell-manifest.sha256" ] && [ -f "$1/.blackwell-manifest.stat" ] \
    && cache_stat "$1" | cmp -s - "$1/.blackwell-manifest.stat"
}
placed() {
  printf 'placed=%s\n' "$(stat -c %i "$1")"
}
final=/var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1
manifest="$final/.blackwell-manifest.sha256"
# Already there: the same manifest, and the peer's files still match its fingerprint.
if peer cat /var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1/.blackwell-manifest.sha256 2>/dev/null | cmp -s - "$manifest" \
   && peer "$(declare -f cache_stat cache_intact); cache_intact $(printf %q "$final")"; then
  log "already there"
  peer "$(declare -f placed); placed $(printf %q "$final")"
  exit 0
fi
peer mkdir -p /var/lib/blackwell-serving/models/.staging/blackwell-lab--tiny-llama--lab-v1
# rsync -e takes one word that it splits on spaces, honouring single quotes (not backslashes).
rsh=$(printf "'%s' " "${peer_ssh[@]}")
# The files spread over up to 4 rsync streams (one SSH cipher each), by size: the
# largest file first, each to the stream with the fewest bytes so far.
lists=$(mktemp -d)
trap 'rm -f "$peer_known_hosts"; rm -rf "$lists"' EXIT
(cd "$final" && find . ! -type d -printf '%s %P\n') | sort -nr \
  | awk -v n=4 -v dir="$lists" '{
      best = 1; for (i = 2; i <= n; i++) if (load[i] < load[best]) best = i
      load[best] += $1; sub(/^[0-9]+ /, ""); print > (dir "/" best)
    }'
count=$(find "$lists" -type f | wc -l)
log "copying $(du -sh "$final" | cut -f1) over the fabric in $count stream(s)"
pids=()
for list in "$lists"/*; do
  (rsync -a --partial --inplace --info=progress2 --timeout=300 -e "$rsh" --files-from="$list" \
     "$final/" root@198.19.0.12:/var/lib/blackwell-serving/models/.staging/blackwell-lab--tiny-llama--lab-v1/ 2>&1 | progress) &
  pids+=("$!")
done
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
if [ "$failed" != 0 ]; then
  log "a copy stream failed (its output: $progress_log); the next run resumes what arrived"
  exit 1
fi
log "verifying on the peer"
peer 'cd /var/lib/blackwell-serving/models/.staging/blackwell-lab--tiny-llama--lab-v1 && sha256sum -c --quiet .blackwell-manifest.sha256 && rm -rf /var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1 && mv /var/lib/blackwell-serving/models/.staging/blackwell-lab--tiny-llama--lab-v1 /var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1'
log "copied and verified"
peer "$(declare -f placed); placed $(printf %q "$final")"
