#!/usr/bin/env bash
# Make sure a Debian package is on the node. One already installed is left as it is (and stays
# on destroy); a missing one is installed with apt and recorded, so that destroy removes it and
# nothing else. Its own units are masked first: a unit of ours runs its program, and the
# package's daemon would take the same port at install.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'package prometheus-node-exporter' "$*" >&2; bws_said+=("$*"); }
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
    systemctl) package=systemd ;;
    apt-get) package=apt ;;
    dpkg-query) package=dpkg ;;
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
record=/var/lib/blackwell-serving/packages/prometheus-node-exporter.installed
if dpkg-query -W -f '${Status}' prometheus-node-exporter 2>/dev/null | grep -q 'install ok installed'; then
  if [ -e "$record" ]; then log "installed (by this stack)"; else log "installed (before this stack: kept)"; fi
  exit 0
fi
if [ ! -e /etc/systemd/system/prometheus-node-exporter.service ]; then systemctl mask prometheus-node-exporter.service >/dev/null 2>&1; fi
export DEBIAN_FRONTEND=noninteractive
log "installing" prometheus-node-exporter "with apt"
# The node's package lists may be empty (a minimal image); a held lock is waited for.
apt-get -q -o DPkg::Lock::Timeout=300 update >&2
apt-get -q -y -o DPkg::Lock::Timeout=300 install --no-install-recommends prometheus-node-exporter >&2
install -d -m 0755 /var/lib/blackwell-serving/packages
touch "$record"
log "installed $(dpkg-query -W -f '${Version}' prometheus-node-exporter)"
