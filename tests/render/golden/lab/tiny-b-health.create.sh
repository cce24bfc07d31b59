#!/usr/bin/env bash
# The health gate: /health alone misses a dead worker, so wait for the served model to be listed
# and then ask for a real chat completion. Bounded by the deployment's health timeout.
# Engine units checked: d21a92a51149 (a new engine means a new check).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'health tiny-b' "$*" >&2; }
base=http://127.0.0.1:8002
headers=$(mktemp)
trap 'rm -f "$headers"' EXIT
chmod 0600 "$headers"
echo 'Content-Type: application/json' > "$headers"
# The API key stays out of argv: read from the root-only env file into a header file.
key=$(sed -n 's/^VLLM_API_KEY=//p' /etc/blackwell-serving/tiny-b.env)
printf 'Authorization: Bearer %s\n' "$key" >> "$headers"
deadline=$(( $(date +%s) + 900 ))
until curl -fsS --max-time 10 -H @"$headers" "$base/v1/models" 2>/dev/null | grep -q '"tiny-llama-b"'; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    log "no /v1/models listing" tiny-llama-b "after 900 s"
    systemctl status bws-tiny-b.service --no-pager -n 20 >&2 || true
    exit 1
  fi
  if ! systemctl is-active --quiet bws-tiny-b.service; then
    log bws-tiny-b.service "is not running"
    journalctl -u bws-tiny-b.service -n 40 --no-pager >&2 || true
    exit 1
  fi
  sleep 5
done
log "model listed; sending a chat completion"
body=$(mktemp)
trap 'rm -f "$headers" "$body"' EXIT
cat > "$body" <<'BWS_BODY_EOF'
{"model": "tiny-llama-b", "max_tokens": 8, "temperature": 0, "messages": [{"role": "user", "content": "Say hello."}]}
BWS_BODY_EOF
start=$(date +%s%N)
reply=$(curl -fsS --max-time 300 -H @"$headers" --data-binary @"$body" "$base/v1/chat/completions")
ms=$(( ($(date +%s%N) - start) / 1000000 ))
if ! printf '%s' "$reply" | grep -q '"choices"'; then
  log "the completion failed: $reply"
  exit 1
fi
log "completion answered in $ms ms"
printf '%s\n' "$reply"
