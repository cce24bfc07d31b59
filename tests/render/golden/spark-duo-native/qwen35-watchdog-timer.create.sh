#!/usr/bin/env bash
# Arm a deployment's watchdog: its script, its oneshot service and its timer.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'watchdog qwen35' "$*" >&2; }
install -d -m 0755 /var/lib/blackwell-serving/watchdog
cat > /var/lib/blackwell-serving/watchdog/qwen35.sh.tmp <<'BWS_SCRIPT_EOF'
#!/usr/bin/env bash
# A deployment's watchdog, run by its timer: a real chat completion; after `failures` failures in
# a row (a wedged engine: its process alive, no answers), restart the deployment's units in order
# and say why in this unit's journal. A start that has not answered yet is loading its weights:
# judged only after the grace (the health gate's timeout). A stopped or restarting engine is left
# to systemd's restart policy.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'watchdog qwen35' "$*" >&2; }
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
engine=bws-qwen35.service
state=/run/blackwell-serving/watchdog
install -d -m 0700 "$state"
count="$state/"qwen35.failures
answered="$state/"qwen35.answered
if ! systemctl is-active --quiet "$engine"; then
  rm -f "$count"
  exit 0
fi
run=$(systemctl show -p InvocationID --value "$engine")
if reply=$(ask 30 2>&1) && printf '%s' "$reply" | grep -q '"choices"'; then
  echo "$run" > "$answered"
  rm -f "$count"
  exit 0
fi
if [ "$(cat "$answered" 2>/dev/null || true)" != "$run" ]; then
  started=$(systemctl show -p ActiveEnterTimestampMonotonic --value "$engine")
  now=$(awk '{ printf "%d", $1 * 1000000 }' /proc/uptime)
  if [ $(( (now - started) / 1000000 )) -lt 1800 ]; then
    log "no answer yet from this start of $engine; within its 1800 s to load"
    exit 0
  fi
fi
n=$(( $(cat "$count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$count"
log "no completion ($n of 3 in a row): ${reply:0:300}"
if [ "$n" -ge 3 ]; then
  log "restarting" bws-qwen35.service "(3 failed checks in a row)"
  systemctl restart bws-qwen35.service
  rm -f "$count"
fi
BWS_SCRIPT_EOF
chmod 0700 /var/lib/blackwell-serving/watchdog/qwen35.sh.tmp
mv -f /var/lib/blackwell-serving/watchdog/qwen35.sh.tmp /var/lib/blackwell-serving/watchdog/qwen35.sh
cat > /etc/systemd/system/bws-qwen35-watchdog.service.tmp <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Watchdog qwen35); run by bws-qwen35-watchdog.timer.
[Unit]
Description=blackwell-serving watchdog of qwen35
After=bws-qwen35.service

[Service]
Type=oneshot
ExecStart=/bin/bash "/var/lib/blackwell-serving/watchdog/qwen35.sh"
TimeoutStartSec=330
BWS_UNIT_EOF
mv -f /etc/systemd/system/bws-qwen35-watchdog.service.tmp /etc/systemd/system/bws-qwen35-watchdog.service
cat > /etc/systemd/system/bws-qwen35-watchdog.timer.tmp <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Watchdog qwen35); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving watchdog of qwen35, every 30 s

[Timer]
OnActiveSec=30
OnUnitInactiveSec=30
AccuracySec=1s

[Install]
WantedBy=timers.target
BWS_UNIT_EOF
mv -f /etc/systemd/system/bws-qwen35-watchdog.timer.tmp /etc/systemd/system/bws-qwen35-watchdog.timer
systemctl daemon-reload
systemctl enable bws-qwen35-watchdog.timer >/dev/null 2>&1
systemctl restart bws-qwen35-watchdog.timer
log "armed: a completion every 30 s; 3 failures in a row restart" bws-qwen35.service 