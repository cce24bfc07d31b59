#!/usr/bin/env bash
# Arm a deployment's watchdog: its script, its oneshot service and its timer.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'watchdog tiny' "$*" >&2; }
install -d -m 0755 /var/lib/blackwell-serving/watchdog
cat > /var/lib/blackwell-serving/watchdog/tiny.sh.tmp <<'BWS_SCRIPT_EOF'
#!/usr/bin/env bash
# A deployment's watchdog, run by its timer: a real chat completion; after `failures` failures in
# a row (a wedged engine: its process alive, no answers), restart the deployment's units in order
# and say why in this unit's journal. A start that has not answered yet is loading its weights:
# judged only after the grace (the health gate's timeout). A stopped or restarting engine is left
# to systemd's restart policy.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'watchdog tiny' "$*" >&2; }
base=http://127.0.0.1:8000
ask_dir=$(mktemp -d)
trap 'rm -rf "$ask_dir"' EXIT
echo 'Content-Type: application/json' > "$ask_dir/headers"
printf 'Authorization: Bearer %s\n' "$(sed -n 's/^VLLM_API_KEY=//p' /etc/blackwell-serving/tiny.env)" >> "$ask_dir/headers"
cat > "$ask_dir/body" <<'BWS_BODY_EOF'
{"model": "tiny-llama", "max_tokens": 8, "temperature": 0, "messages": [{"role": "user", "content": "Say hello."}]}
BWS_BODY_EOF
ask() { curl -fsS --max-time "$1" -H @"$ask_dir/headers" --data-binary @"$ask_dir/body" "$base/v1/chat/completions"; }
list_models() { curl -fsS --max-time "$1" -H @"$ask_dir/headers" "$base/v1/models"; }
engine=bws-tiny.service
state=/run/blackwell-serving/watchdog
install -d -m 0700 "$state"
count="$state/"tiny.failures
answered="$state/"tiny.answered
if ! systemctl is-active --quiet "$engine"; then
  rm -f "$count"
  exit 0
fi
run=$(systemctl show -p InvocationID --value "$engine")
if reply=$(ask 10 2>&1) && printf '%s' "$reply" | grep -q '"choices"'; then
  echo "$run" > "$answered"
  rm -f "$count"
  exit 0
fi
if [ "$(cat "$answered" 2>/dev/null || true)" != "$run" ]; then
  started=$(systemctl show -p ActiveEnterTimestampMonotonic --value "$engine")
  now=$(awk '{ printf "%d", $1 * 1000000 }' /proc/uptime)
  if [ $(( (now - started) / 1000000 )) -lt 900 ]; then
    log "no answer yet from this start of $engine; within its 900 s to load"
    exit 0
  fi
fi
n=$(( $(cat "$count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$count"
log "no completion ($n of 2 in a row): ${reply:0:300}"
if [ "$n" -ge 2 ]; then
  log "restarting" bws-tiny.service "(2 failed checks in a row)"
  systemctl restart bws-tiny.service
  rm -f "$count"
fi
BWS_SCRIPT_EOF
chmod 0700 /var/lib/blackwell-serving/watchdog/tiny.sh.tmp
mv -f /var/lib/blackwell-serving/watchdog/tiny.sh.tmp /var/lib/blackwell-serving/watchdog/tiny.sh
cat > /etc/systemd/system/bws-tiny-watchdog.service.tmp <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Watchdog tiny); run by bws-tiny-watchdog.timer.
[Unit]
Description=blackwell-serving watchdog of tiny
After=bws-tiny.service

[Service]
Type=oneshot
ExecStart=/bin/bash "/var/lib/blackwell-serving/watchdog/tiny.sh"
TimeoutStartSec=310
BWS_UNIT_EOF
mv -f /etc/systemd/system/bws-tiny-watchdog.service.tmp /etc/systemd/system/bws-tiny-watchdog.service
cat > /etc/systemd/system/bws-tiny-watchdog.timer.tmp <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Watchdog tiny); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving watchdog of tiny, every 10 s

[Timer]
OnActiveSec=10
OnUnitInactiveSec=10
AccuracySec=1s

[Install]
WantedBy=timers.target
BWS_UNIT_EOF
mv -f /etc/systemd/system/bws-tiny-watchdog.timer.tmp /etc/systemd/system/bws-tiny-watchdog.timer
systemctl daemon-reload
systemctl enable bws-tiny-watchdog.timer >/dev/null 2>&1
systemctl restart bws-tiny-watchdog.timer
log "armed: a completion every 10 s; 2 failures in a row restart" bws-tiny.service 