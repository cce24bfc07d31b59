#!/usr/bin/env bash
# Arm a deployment's watchdog: its script, its oneshot service and its timer.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'watchdog tiny-gguf' "$*" >&2; bws_said+=("$*"); }
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
    awk) package=mawk ;;
    curl) package=curl ;;
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
cat > /var/lib/blackwell-serving/watchdog/tiny-gguf.sh.tmp <<'BWS_SCRIPT_EOF'
#!/usr/bin/env bash
# A deployment's watchdog, run by its timer: a real chat completion; after `failures` failures in
# a row (a wedged engine: its process alive, no answers), restart the deployment's units in order
# and say why in this unit's journal. A check with no answer while the engine's work counters moved
# (its /metrics read before and after it: the engine's progress_counters, components/engines) met
# a busy engine, not a wedged one: no failure, said once per busy stretch; the wedged alert reads
# the same counters. A start that has not answered yet is loading its weights:
# judged only after the grace (the health gate's timeout). An engine that is not active (stopped
# by hand, given up on by systemd, or being restarted by it) is left alone, and the journal says
# so once per stop, not every interval: its state, since when, and how to hand it back.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'watchdog tiny-gguf' "$*" >&2; bws_said+=("$*"); }
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
    awk) package=mawk ;;
    curl) package=curl ;;
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
base=http://127.0.0.1:8003
ask_dir=$(mktemp -d)
trap 'rm -rf "$ask_dir"' EXIT
echo 'Content-Type: application/json' > "$ask_dir/headers"
printf 'Authorization: Bearer %s\n' "$(sed -n 's/^LLAMA_API_KEY=//p' /etc/blackwell-serving/tiny-gguf.env)" >> "$ask_dir/headers"
cat > "$ask_dir/body" <<'BWS_BODY_EOF'
{"model": "tiny-llama-gguf", "max_tokens": 8, "temperature": 0, "messages": [{"role": "user", "content": "Say hello."}]}
BWS_BODY_EOF
ask() { curl -fsS --max-time "$1" -H @"$ask_dir/headers" --data-binary @"$ask_dir/body" "$base/v1/chat/completions"; }
list_models() { curl -fsS --max-time "$1" -H @"$ask_dir/headers" "$base/v1/models"; }
engine=bws-tiny-gguf.service
state=/run/blackwell-serving/watchdog
install -d -m 0700 "$state"
count="$state/"tiny-gguf.failures
answered="$state/"tiny-gguf.answered
skipped="$state/"tiny-gguf.skipped
busy="$state/"tiny-gguf.busy
# The restarts it made, as node_exporter's textfile collector reads them: 0 from its first run
# (a runtime count: a reboot resets it, as Prometheus expects of a counter).
restarts="$state/"tiny-gguf.restarts
textfile=/var/lib/blackwell-serving/textfile/bws-watchdog-tiny-gguf.prom
write_restarts() {
  install -d -m 0755 "$(dirname "$textfile")"
  printf '# HELP %s Restarts the blackwell-serving watchdog made of a wedged engine.\n# TYPE %s counter\n%s{deployment="%s"} %s\n' \
    bws_watchdog_restarts_total bws_watchdog_restarts_total \
    bws_watchdog_restarts_total tiny-gguf "$(cat "$restarts" 2>/dev/null || echo 0)" > "$textfile.tmp"
  mv -f "$textfile.tmp" "$textfile"
}
write_restarts
if ! systemctl is-active --quiet "$engine"; then
  rm -f "$count"
  props=$(systemctl show -p ActiveState -p SubState -p Result -p InactiveEnterTimestamp \
    -p InactiveEnterTimestampMonotonic "$engine")
  prop() { printf '%s\n' "$props" | sed -n "s/^$1=//p"; }
  # One stop: the state it settled in and when it entered it; told once, until the engine runs
  # again. A unit on its way (stopping, starting) is told of once it gets there.
  case "$(prop ActiveState) $(prop SubState)" in
    "inactive "*|"failed "*)
      why="it is $(prop ActiveState) ($(prop SubState), result $(prop Result)) since $(prop InactiveEnterTimestamp):"
      why="$why stopped by hand or given up on by systemd, so it is left as it is; hand it back to the watchdog"
      why="$why with: systemctl start $engine" ;;
    "activating auto-restart")
      why="it is activating (auto-restart): systemd restarts it by its restart policy; checked again once it is active" ;;
    *) exit 0 ;;
  esac
  stop="$(prop ActiveState) $(prop SubState) $(prop InactiveEnterTimestampMonotonic)"
  if [ "$(cat "$skipped" 2>/dev/null || true)" != "$stop" ]; then
    echo "$stop" > "$skipped"
    log "not checking $engine: $why"
  fi
  exit 0
fi
rm -f "$skipped"
run=$(systemctl show -p InvocationID --value "$engine")
# The sum of the engine's work counters on its /metrics; nothing when it does not answer.
work_done() {
  curl -fsS --max-time 10 -H @"$ask_dir/headers" "$base"/metrics 2>/dev/null \
    | awk -v names=llamacpp:n_decode_total '
        BEGIN { n = split(names, list, " "); for (i = 1; i <= n; i++) wanted[list[i]] = 1 }
        /^#/ { next }
        { name = $0; sub(/[{ ].*/, "", name); if (name in wanted) { total += $NF; seen = 1 } }
        END { if (seen) printf "%.0f\n", total }'
}
before=$(work_done || true)
if reply=$(ask 10 2>&1) && printf '%s' "$reply" | grep -q '"choices"'; then
  echo "$run" > "$answered"
  rm -f "$count" "$busy"
  exit 0
fi
after=$(work_done || true)
if [ -n "$before" ] && [ -n "$after" ] && [ "$after" -gt "$before" ]; then
  echo "$run" > "$answered"
  rm -f "$count"
  if [ ! -e "$busy" ]; then
    log "no completion in 10 s, but its work counters moved ($before -> $after): busy, not wedged; no failure counted while they move"
    touch "$busy"
  fi
  exit 0
fi
rm -f "$busy"
if [ "$(cat "$answered" 2>/dev/null || true)" != "$run" ]; then
  started=$(systemctl show -p ActiveEnterTimestampMonotonic --value "$engine")
  now=$(awk '{ printf "%.0f", $1 * 1000000 }' /proc/uptime)
  if [ $(( (now - started) / 1000000 )) -lt 1800 ]; then
    log "no answer yet from this start of $engine; within its 1800 s to load"
    exit 0
  fi
fi
n=$(( $(cat "$count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$count"
log "no completion ($n of 2 in a row): ${reply:0:300}"
if [ "$n" -ge 2 ]; then
  log "restarting" bws-tiny-gguf.service "(2 failed checks in a row)"
  echo $(( $(cat "$restarts" 2>/dev/null || echo 0) + 1 )) > "$restarts"
  write_restarts
  systemctl restart bws-tiny-gguf.service
  rm -f "$count"
fi
BWS_SCRIPT_EOF
chmod 0700 /var/lib/blackwell-serving/watchdog/tiny-gguf.sh.tmp
mv -f /var/lib/blackwell-serving/watchdog/tiny-gguf.sh.tmp /var/lib/blackwell-serving/watchdog/tiny-gguf.sh
cat > /etc/systemd/system/bws-tiny-gguf-watchdog.service.tmp <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Watchdog tiny-gguf); run by bws-tiny-gguf-watchdog.timer.
[Unit]
Description=blackwell-serving watchdog of tiny-gguf
After=bws-tiny-gguf.service

[Service]
Type=oneshot
ExecStart=/bin/bash "/var/lib/blackwell-serving/watchdog/tiny-gguf.sh"
TimeoutStartSec=310
BWS_UNIT_EOF
mv -f /etc/systemd/system/bws-tiny-gguf-watchdog.service.tmp /etc/systemd/system/bws-tiny-gguf-watchdog.service
cat > /etc/systemd/system/bws-tiny-gguf-watchdog.timer.tmp <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Watchdog tiny-gguf); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving watchdog of tiny-gguf, every 10 s

[Timer]
OnActiveSec=10
OnUnitInactiveSec=10
AccuracySec=1s

[Install]
WantedBy=timers.target
BWS_UNIT_EOF
mv -f /etc/systemd/system/bws-tiny-gguf-watchdog.timer.tmp /etc/systemd/system/bws-tiny-gguf-watchdog.timer
systemctl daemon-reload
systemctl enable bws-tiny-gguf-watchdog.timer >/dev/null 2>&1
systemctl restart bws-tiny-gguf-watchdog.timer
log "armed: a completion every 10 s; 2 failures in a row restart" bws-tiny-gguf.service 