#!/usr/bin/env bash
# The gateway's health gate: every routed model listed in /v1/models, a request without the key
# refused, then a real request through the gateway for each model (a chat completion, or an
# embedding), with the gateway's key. Bounded by gateway.health.timeout_s.
# Gateway checked: 156ebf808597 (new routes or a new unit mean a new check).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'health gateway' "$*" >&2; }
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
  grep -q '"qwen3.5-122b"' "$work/models" || return 1
  grep -q '"embeddings"' "$work/models" || return 1
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
log "every model listed (2)"
code=$(curl -s -o /dev/null --max-time 10 -w '%{http_code}' "$base/v1/models" || true)
case "$code" in
  401|403) log "a request without the key is refused (HTTP $code)" ;;
  *) log "a request without the key was answered HTTP $code, not refused"; exit 1 ;;
esac
cat > "$work/body" <<'BWS_BODY_EOF'
{"model": "qwen3.5-122b", "max_tokens": 8, "temperature": 0, "messages": [{"role": "user", "content": "Say hello."}]}
BWS_BODY_EOF
start=$(date +%s%N)
if ! reply=$(curl -sS --max-time 300 -H @"$headers" --data-binary @"$work/body" "$base"/v1/chat/completions); then
  log "model" qwen3.5-122b "did not answer through the gateway"
  exit 1
fi
if ! printf '%s' "$reply" | grep -q '"choices"'; then
  log "model" qwen3.5-122b "failed through the gateway: $(printf '%s' "$reply" | head -c 400)"
  exit 1
fi
log "model" qwen3.5-122b "answered through the gateway in $(( ($(date +%s%N) - start) / 1000000 )) ms"
printf 'answered=%s\n' qwen3.5-122b
cat > "$work/body" <<'BWS_BODY_EOF'
{"model": "embeddings", "input": "Say hello."}
BWS_BODY_EOF
start=$(date +%s%N)
if ! reply=$(curl -sS --max-time 300 -H @"$headers" --data-binary @"$work/body" "$base"/v1/embeddings); then
  log "model" embeddings "did not answer through the gateway"
  exit 1
fi
if ! printf '%s' "$reply" | grep -q '"data"'; then
  log "model" embeddings "failed through the gateway: $(printf '%s' "$reply" | head -c 400)"
  exit 1
fi
log "model" embeddings "answered through the gateway in $(( ($(date +%s%N) - start) / 1000000 )) ms"
printf 'answered=%s\n' embeddings
