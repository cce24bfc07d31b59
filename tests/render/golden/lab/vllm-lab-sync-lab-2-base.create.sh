#!/usr/bin/env bash
# Pull the base image on this node from its registry, beside its build on the build node
# (images[].peers_pull_base): the copy of the built image over the fabric then sends only the
# layers this node lacks. Not a failure when the registry cannot be reached: the copy sends the
# whole image then, as without this step. The base is the operator's: nothing to undo.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'base 198.18.0.1:5000/lab/vllm-cpu:0.32.0' "$*" >&2; bws_said+=("$*"); }
progress_log=/var/log/blackwell-serving/base-198.18.0.1-5000-lab-vllm-cpu-0.32.0.log
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
    docker) package=docker.io ;;
    awk) package=mawk ;;
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
log "pulling"
if docker pull 198.18.0.1:5000/lab/vllm-cpu:0.32.0 2>&1 | progress; then
  log "pulled"
else
  log "could not pull it here: the copy over the fabric sends the whole image"
fi
