#!/usr/bin/env bash
# Arm a deployment's watchdog: its script, its oneshot service and its timer.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'watchdog qwen35-rank1' "$*" >&2; bws_said+=("$*"); }
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
    systemctl) package=systemd ;;
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
install -d -m 0755 /var/lib/blackwell-serving/watchdog
cat > /var/lib/blackwell-serving/watchdog/qwen35-rank1.sh.tmp <<'BWS_SCRIPT_EOF'
#!/usr/bin/env bash
# The rank watch of a native deployment's rank on a node other than the head, run by its timer.
# A rank that has joined its head holds TCP connections to the head's fabric address (the
# process groups, the head's message queues). When the head restarts alone (its own crash, the
# watchdog's restart), such a rank keeps waiting on its dead peers and never notices, while the
# new head waits for it at the rendezvous: the deployment never serves again (vLLM 0.32, found in
# the lab). So: once this start of the rank has held a connection to the head, `failures` checks
# in a row without any restart the rank's unit, which meets the new head. A rank that has not
# joined yet is left waiting while its head is down or loading (its rendezvous port closed), or
# while the rank itself is young (it connects once its imports are done). A start that has had
# time to connect and holds no connection to a head that listens at its rendezvous port joined
# a head that is gone (a rank restarted just before its head: the next head waits for it in
# vain) and counts as lost too.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'rank watch qwen35-rank1' "$*" >&2; bws_said+=("$*"); }
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
    systemctl) package=systemd ;;
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
engine=bws-qwen35.service
state=/run/blackwell-serving/watchdog
install -d -m 0700 "$state"
count="$state/"qwen35-rank1.failures
joined="$state/"qwen35-rank1.joined
if ! systemctl is-active --quiet "$engine"; then
  rm -f "$count"
  exit 0
fi
run=$(systemctl show -p InvocationID --value "$engine")
# The rank's processes: those in the cgroup of its container.
pid=$(docker inspect -f '{{.State.Pid}}' bws-qwen35 2>/dev/null || echo 0)
if [ "${pid:-0}" -le 0 ] || ! cgroup=$(cat "/proc/$pid/cgroup" 2>/dev/null); then
  exit 0
fi
sockets=$(for p in /proc/[0-9]*; do
    if [ "$(cat "$p/cgroup" 2>/dev/null || true)" = "$cgroup" ]; then ls -l "$p/fd" 2>/dev/null || true; fi
  done | sed -n 's/.*socket:\[\([0-9]*\)\].*/\1/p' | sort -u)
# The head's fabric address as /proc/net/tcp writes it (little-endian hex); state 01: established.
IFS=. read -r a b c d <<< 192.168.200.12
head_hex=$(printf '%02X%02X%02X%02X' "$d" "$c" "$b" "$a")
links=0
if [ -n "$sockets" ]; then
  links=$(awk -v h="$head_hex" 'NR > 1 && $4 == "01" && substr($3, 1, 8) == h { print $10 }' "/proc/$pid/net/tcp" \
    | grep -cxF -f <(printf '%s\n' "$sockets") || true)
fi
if [ "$links" -gt 0 ]; then
  echo "$run" > "$joined"
  rm -f "$count"
  exit 0
fi
lost="the head restarted without this rank"
if [ "$(cat "$joined" 2>/dev/null || true)" != "$run" ]; then
  since=$(date -d "$(systemctl show -p ActiveEnterTimestamp --value "$engine")" +%s 2>/dev/null || date +%s)
  age=$(( $(date +%s) - since ))
  if [ "$age" -lt 90 ] \
      || ! timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ 192.168.200.12 29501 2>/dev/null; then
    rm -f "$count"
    log "this start of $engine has not joined its head ("192.168.200.12") yet; waiting"
    exit 0
  fi
  lost="this start (${age} s old) never held one, and the head listens at its rendezvous port 29501"
fi
n=$(( $(cat "$count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$count"
log "no connection to the head "192.168.200.12" ($n of 3 in a row): $lost"
if [ "$n" -ge 3 ]; then
  log "restarting $engine to meet the head again (3 checks in a row)"
  rm -f "$count" "$joined"
  systemctl restart "$engine"
fi
BWS_SCRIPT_EOF
chmod 0700 /var/lib/blackwell-serving/watchdog/qwen35-rank1.sh.tmp
mv -f /var/lib/blackwell-serving/watchdog/qwen35-rank1.sh.tmp /var/lib/blackwell-serving/watchdog/qwen35-rank1.sh
cat > /etc/systemd/system/bws-qwen35-rank1-watch.service.tmp <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Watchdog qwen35-rank1); run by bws-qwen35-rank1-watch.timer.
[Unit]
Description=blackwell-serving watchdog of qwen35-rank1
After=bws-qwen35.service

[Service]
Type=oneshot
ExecStart=/bin/bash "/var/lib/blackwell-serving/watchdog/qwen35-rank1.sh"
TimeoutStartSec=330
BWS_UNIT_EOF
mv -f /etc/systemd/system/bws-qwen35-rank1-watch.service.tmp /etc/systemd/system/bws-qwen35-rank1-watch.service
cat > /etc/systemd/system/bws-qwen35-rank1-watch.timer.tmp <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Watchdog qwen35-rank1); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving watchdog of qwen35-rank1, every 30 s

[Timer]
OnActiveSec=30
OnUnitInactiveSec=30
AccuracySec=1s

[Install]
WantedBy=timers.target
BWS_UNIT_EOF
mv -f /etc/systemd/system/bws-qwen35-rank1-watch.timer.tmp /etc/systemd/system/bws-qwen35-rank1-watch.timer
systemctl daemon-reload
systemctl enable bws-qwen35-rank1-watch.timer >/dev/null 2>&1
systemctl restart bws-qwen35-rank1-watch.timer
log 'armed: every 30 s, 3 checks in a row without a connection to the head 192.168.200.12 (once joined) restart bws-qwen35.service'