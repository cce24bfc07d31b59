#!/usr/bin/env bash
# The benchmark after the health gate: benchmark_engine.py (sent on stdin) against the real
# endpoint on this node's loopback, as the health gate asks it. Prints decode-tok-s, ttft-ms,
# aggregate-tok-s and concurrency as key=value lines, the stack output `benchmark`. The API key
# stays in its root-only env file: the program reads it there (its path is all argv carries).
# Engine units measured: 706c74c97618 (a new engine means a new measurement).
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'benchmark tiny' "$*" >&2; bws_said+=("$*"); }
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
    python3) package=python3 ;;
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
script=$(mktemp)
trap 'rm -f "$script"' EXIT
cat > "$script"
if command -v python3 >/dev/null 2>&1; then
  python3 "$script" http://127.0.0.1:8000 tiny-llama 2 '[]' 32 4 900 - /etc/blackwell-serving/tiny.env VLLM_API_KEY
else
  # No python3 on the node: the engine image's, on the host's network, the key file mounted read-only.
  docker run -i --rm --network host --mount type=bind,source=/etc/blackwell-serving/tiny.env,target=/run/secrets/blackwell-serving-benchmark.env,readonly \
    --entrypoint python3 blackwell-serving/vllm-lab:2b5ceeb6797a - http://127.0.0.1:8000 tiny-llama 2 '[]' 32 4 900 - /run/secrets/blackwell-serving-benchmark.env VLLM_API_KEY < "$script"
fi
