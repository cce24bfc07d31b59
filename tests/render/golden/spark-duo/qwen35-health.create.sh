#!/usr/bin/env bash
# The health gate: /health alone misses a dead worker, so wait for the served model to be listed
# and then ask for a real chat completion. Bounded by the deployment's health timeout.
# Engine units checked: dc0371e1da15 (a new engine means a new check).
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'health qwen35' "$*" >&2; bws_said+=("$*"); }
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
    systemctl|journalctl) package=systemd ;;
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
base=http://127.0.0.1:8000
ask_dir=$(mktemp -d)
trap 'rm -rf "$ask_dir"' EXIT
echo 'Content-Type: application/json' > "$ask_dir/headers"
printf 'Authorization: Bearer %s\n' "$(sed -n 's/^VLLM_API_KEY=//p' /etc/blackwell-serving/qwen35.env)" >> "$ask_dir/headers"
cat > "$ask_dir/body" <<'BWS_BODY_EOF'
{"model": "qwen3.5-122b", "max_tokens": 8, "temperature": 0, "messages": [{"role": "user", "content": "Say hello."}]}
BWS_BODY_EOF
ask() { curl -fsS --max-time "$1" -H @"$ask_dir/headers" --data-binary @"$ask_dir/body" "$base/v1/chat/completions"; }
list_models() { curl -fsS --max-time "$1" -H @"$ask_dir/headers" "$base/v1/models"; }
deadline=$(( $(date +%s) + 1800 ))
# systemd's restarts (activating, auto-restart) are waited out within the timeout; the gate fails
# at once only when the unit has given up: failed, its start limit hit, or inactive with no
# restart pending; or when it is in a crash loop: our units restart forever (StartLimitIntervalSec=0),
# so more than 3 restarts since the gate began count as giving up.
first_restarts=""
until list_models 10 2>/dev/null | grep -q '"qwen3.5-122b"'; do
  shown=$(systemctl show -p ActiveState,SubState,Result,NRestarts bws-qwen35.service 2>/dev/null || true)
  active=$(printf '%s\n' "$shown" | sed -n 's/^ActiveState=//p')
  sub=$(printf '%s\n' "$shown" | sed -n 's/^SubState=//p')
  result=$(printf '%s\n' "$shown" | sed -n 's/^Result=//p')
  if [ "$active" = failed ] || [ "$result" = start-limit-hit ] \
      || { [ "$active" = inactive ] && [ "$sub" != auto-restart ]; }; then
    log bws-qwen35.service "gave up: ${active:-unknown} (${result:-no result})"
    journalctl -u bws-qwen35.service -n 40 --no-pager >&2 || true
    exit 1
  fi
  restarts=$(printf '%s\n' "$shown" | sed -n 's/^NRestarts=//p')
  case "$restarts" in ''|*[!0-9]*) restarts=0 ;; esac
  first_restarts=${first_restarts:-$restarts}
  if [ $(( restarts - first_restarts )) -gt 3 ]; then
    log bws-qwen35.service "gave up: a crash loop ($(( restarts - first_restarts )) restarts since the gate began, ${active:-unknown}/${sub:-unknown})"
    journalctl -u bws-qwen35.service -n 40 --no-pager >&2 || true
    exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    log "no /v1/models listing" qwen3.5-122b "after 1800 s (the unit is ${active:-unknown}/${sub:-unknown})"
    systemctl status bws-qwen35.service --no-pager -n 20 >&2 || true
    exit 1
  fi
  sleep 5
done
log "model listed; sending a chat completion"
start=$(date +%s%N)
reply=$(ask 300)
ms=$(( ($(date +%s%N) - start) / 1000000 ))
if ! printf '%s' "$reply" | grep -q '"choices"'; then
  log "the completion failed: $reply"
  exit 1
fi
log "completion answered in $ms ms"
printf '%s\n' "$reply"
since=$(systemctl show -p ActiveEnterTimestamp --value bws-qwen35.service 2>/dev/null || true)
if [ -n "$since" ]; then
  { journalctl -u bws-qwen35.service --since "$since" -o cat --no-pager 2>/dev/null || true; } \
    | grep -F -- 'KV cache size:' | tail -n 3 | sed 's/^/kv-report=/' || true
fi
usage=$(docker stats --no-stream --format '{{.MemUsage}}' bws-qwen35 2>/dev/null || true)
printf 'memory-usage=%s\n' "${usage%% /*}"
