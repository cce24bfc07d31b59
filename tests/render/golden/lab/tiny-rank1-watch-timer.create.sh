#!/usr/bin/env bash
# Arm a deployment's watchdog: its script, its oneshot service and its timer.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'watchdog tiny-rank1' "$*" >&2; }
install -d -m 0755 /var/lib/blackwell-serving/watchdog
cat > /var/lib/blackwell-serving/watchdog/tiny-rank1.sh.tmp <<'BWS_SCRIPT_EOF'
#!/usr/bin/env bash
# The rank watch of a native deployment's rank on a node other than the head, run by its timer.
# A rank that has joined its head holds TCP connections to the head's fabric address (the
# process groups, the head's message queues). When the head restarts alone (its own crash, the
# watchdog's restart), such a rank keeps waiting on its dead peers and never notices, while the
# new head waits for it at the rendezvous: the deployment never serves again (vLLM 0.32, found in
# the lab). So: once this start of the rank has held a connection to the head, `failures` checks
# in a row without any restart the rank's unit, which meets the new head. A rank that has not
# joined yet (its head is down or loading) is left waiting.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'rank watch tiny-rank1' "$*" >&2; }
engine=bws-tiny.service
state=/run/blackwell-serving/watchdog
install -d -m 0700 "$state"
count="$state/"tiny-rank1.failures
joined="$state/"tiny-rank1.joined
if ! systemctl is-active --quiet "$engine"; then
  rm -f "$count"
  exit 0
fi
run=$(systemctl show -p InvocationID --value "$engine")
# The rank's processes: those in the cgroup of its container.
pid=$(docker inspect -f '{{.State.Pid}}' bws-tiny 2>/dev/null || echo 0)
if [ "${pid:-0}" -le 0 ] || ! cgroup=$(cat "/proc/$pid/cgroup" 2>/dev/null); then
  exit 0
fi
sockets=$(for p in /proc/[0-9]*; do
    if [ "$(cat "$p/cgroup" 2>/dev/null || true)" = "$cgroup" ]; then ls -l "$p/fd" 2>/dev/null || true; fi
  done | sed -n 's/.*socket:\[\([0-9]*\)\].*/\1/p' | sort -u)
# The head's fabric address as /proc/net/tcp writes it (little-endian hex); state 01: established.
IFS=. read -r a b c d <<< 198.19.0.11
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
if [ "$(cat "$joined" 2>/dev/null || true)" != "$run" ]; then
  log "this start of $engine has not joined its head ("198.19.0.11") yet; waiting"
  exit 0
fi
n=$(( $(cat "$count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$count"
log "no connection to the head "198.19.0.11" ($n of 2 in a row): the head restarted without this rank"
if [ "$n" -ge 2 ]; then
  log "restarting $engine to meet the head again (2 checks in a row)"
  rm -f "$count" "$joined"
  systemctl restart "$engine"
fi
BWS_SCRIPT_EOF
chmod 0700 /var/lib/blackwell-serving/watchdog/tiny-rank1.sh.tmp
mv -f /var/lib/blackwell-serving/watchdog/tiny-rank1.sh.tmp /var/lib/blackwell-serving/watchdog/tiny-rank1.sh
cat > /etc/systemd/system/bws-tiny-rank1-watch.service.tmp <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Watchdog tiny-rank1); run by bws-tiny-rank1-watch.timer.
[Unit]
Description=blackwell-serving watchdog of tiny-rank1
After=bws-tiny.service

[Service]
Type=oneshot
ExecStart=/bin/bash "/var/lib/blackwell-serving/watchdog/tiny-rank1.sh"
TimeoutStartSec=330
BWS_UNIT_EOF
mv -f /etc/systemd/system/bws-tiny-rank1-watch.service.tmp /etc/systemd/system/bws-tiny-rank1-watch.service
cat > /etc/systemd/system/bws-tiny-rank1-watch.timer.tmp <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Watchdog tiny-rank1); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving watchdog of tiny-rank1, every 10 s

[Timer]
OnActiveSec=10
OnUnitInactiveSec=10
AccuracySec=1s

[Install]
WantedBy=timers.target
BWS_UNIT_EOF
mv -f /etc/systemd/system/bws-tiny-rank1-watch.timer.tmp /etc/systemd/system/bws-tiny-rank1-watch.timer
systemctl daemon-reload
systemctl enable bws-tiny-rank1-watch.timer >/dev/null 2>&1
systemctl restart bws-tiny-rank1-watch.timer
log 'armed: every 10 s, 2 checks in a row without a connection to the head 198.19.0.11 (once joined) restart bws-tiny.service'