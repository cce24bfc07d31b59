#!/usr/bin/env bash
# The health gate: /health alone misses a dead worker, so wait for the served model to be listed
# and then ask for a real chat completion. Bounded by the deployment's health timeout.
# Engine units checked: 5ea6f05fe636 (a new engine means a new check).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'health qwen35' "$*" >&2; }
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
until list_models 10 2>/dev/null | grep -q '"qwen3.5-122b"'; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    log "no /v1/models listing" qwen3.5-122b "after 1800 s"
    systemctl status bws-qwen35.service --no-pager -n 20 >&2 || true
    exit 1
  fi
  if ! systemctl is-active --quiet bws-qwen35.service; then
    log bws-qwen35.service "is not running"
    journalctl -u bws-qwen35.service -n 40 --no-pager >&2 || true
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
