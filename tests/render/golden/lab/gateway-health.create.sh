#!/usr/bin/env bash
# The gateway's health gate: every routed model listed in /v1/models, a request without the key
# and one with a wrong key refused with 401 (what OpenAI clients take for a wrong key), then a real
# request through the gateway for each model (a chat completion, or an embedding), with the
# gateway's key. Bounded by gateway.health.timeout_s.
# Gateway checked: 1f04d72a6d07 (new routes or a new unit mean a new check).
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'health gateway' "$*" >&2; bws_said+=("$*"); }
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
base=http://127.0.0.1:4000
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 0700 "$work"
headers="$work/headers"
echo 'Content-Type: application/json' > "$headers"
# The key stays out of argv: read from the root-only env file into a header file.
key=$(sed -n 's/^LITELLM_MASTER_KEY=//p' /etc/blackwell-serving/gateway.env)
printf 'Authorization: Bearer %s\n' "$key" >> "$headers"
deadline=$(( $(date +%s) + 600 ))
listed() {
  curl -fsS --max-time 10 -H @"$headers" "$base/v1/models" > "$work/models" 2>/dev/null || return 1
  grep -q '"tiny-llama"' "$work/models" || return 1
  grep -q '"tiny-llama-b"' "$work/models" || return 1
  grep -q '"tiny-llama-gguf"' "$work/models" || return 1
}
until listed; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    log "the gateway does not list every model after 600 s: $(head -c 400 "$work/models" 2>/dev/null)"
    journalctl -u bws-gateway.service -n 30 --no-pager >&2 || true
    exit 1
  fi
  if ! systemctl is-active --quiet bws-gateway.service; then
    log bws-gateway.service "is not running"
    journalctl -u bws-gateway.service -n 40 --no-pager >&2 || true
    exit 1
  fi
  sleep 3
done
log "every model listed (3)"
# A wrong key: random, so never the gateway's; it is no secret and may be in argv.
wrong="Authorization: Bearer bws-wrong-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
for probe in "without the key" "with a wrong key"; do
  if [ "$probe" = "without the key" ]; then
    code=$(curl -s -o "$work/refused" --max-time 10 -w '%{http_code}' "$base/v1/models" || true)
  else
    code=$(curl -s -o "$work/refused" --max-time 10 -w '%{http_code}' -H "$wrong" "$base/v1/models" || true)
  fi
  if [ "$code" != 401 ] || ! grep -q '"error"' "$work/refused"; then
    log "a request $probe was answered HTTP $code, not 401: $(head -c 300 "$work/refused" 2>/dev/null)"
    exit 1
  fi
  log "a request $probe is refused (HTTP 401)"
done
cat > "$work/body" <<'BWS_BODY_EOF'
{"model": "tiny-llama", "max_tokens": 8, "temperature": 0, "messages": [{"role": "user", "content": "Say hello."}]}
BWS_BODY_EOF
start=$(date +%s%N)
if ! reply=$(curl -sS --max-time 300 -H @"$headers" --data-binary @"$work/body" "$base"/v1/chat/completions); then
  log "model" tiny-llama "did not answer through the gateway"
  exit 1
fi
if ! printf '%s' "$reply" | grep -q '"choices"'; then
  log "model" tiny-llama "failed through the gateway: $(printf '%s' "$reply" | head -c 400)"
  exit 1
fi
log "model" tiny-llama "answered through the gateway in $(( ($(date +%s%N) - start) / 1000000 )) ms"
printf 'answered=%s\n' tiny-llama
cat > "$work/body" <<'BWS_BODY_EOF'
{"model": "tiny-llama-b", "max_tokens": 8, "temperature": 0, "messages": [{"role": "user", "content": "Say hello."}]}
BWS_BODY_EOF
start=$(date +%s%N)
if ! reply=$(curl -sS --max-time 300 -H @"$headers" --data-binary @"$work/body" "$base"/v1/chat/completions); then
  log "model" tiny-llama-b "did not answer through the gateway"
  exit 1
fi
if ! printf '%s' "$reply" | grep -q '"choices"'; then
  log "model" tiny-llama-b "failed through the gateway: $(printf '%s' "$reply" | head -c 400)"
  exit 1
fi
log "model" tiny-llama-b "answered through the gateway in $(( ($(date +%s%N) - start) / 1000000 )) ms"
printf 'answered=%s\n' tiny-llama-b
cat > "$work/body" <<'BWS_BODY_EOF'
{"model": "tiny-llama-gguf", "max_tokens": 8, "temperature": 0, "messages": [{"role": "user", "content": "Say hello."}]}
BWS_BODY_EOF
start=$(date +%s%N)
if ! reply=$(curl -sS --max-time 300 -H @"$headers" --data-binary @"$work/body" "$base"/v1/chat/completions); then
  log "model" tiny-llama-gguf "did not answer through the gateway"
  exit 1
fi
if ! printf '%s' "$reply" | grep -q '"choices"'; then
  log "model" tiny-llama-gguf "failed through the gateway: $(printf '%s' "$reply" | head -c 400)"
  exit 1
fi
log "model" tiny-llama-gguf "answered through the gateway in $(( ($(date +%s%N) - start) / 1000000 )) ms"
printf 'answered=%s\n' tiny-llama-gguf
