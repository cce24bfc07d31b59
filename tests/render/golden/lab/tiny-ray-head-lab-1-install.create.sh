#!/usr/bin/env bash
# Install (or update) a systemd unit we own, then (re)start it — only when something it runs
# changed: its text (compared with the file on the node before moving into place), the inputs
# it started with (the step's triggers, BWS_INPUTS: the image ID, its secret environment's
# generation), or it is not running. A re-run for any other reason (a new version of this script)
# restarts nothing. Its secrets are another step's (install-env.sh.j2), never on this one's stdin.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'unit bws-tiny-ray-head.service' "$*" >&2; }
unit_path=/etc/systemd/system/bws-tiny-ray-head.service
# The triggers the running unit was started with (written at each restart done here).
record_dir=/var/lib/blackwell-serving/units
record="$record_dir"/bws-tiny-ray-head.service.inputs
inputs="${BWS_INPUTS-}"
install -d -m 0755 "$record_dir"
cat > "$unit_path.tmp" <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (RayCluster tiny-ray); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving Ray head (tiny-ray)
After=docker.service network-online.target
Wants=network-online.target
# Never give up restarting (the RestartSec below spaces the tries; systemd 254+ could grow it,
# Debian 12's 252 cannot): the watchdog and the preview report an engine that keeps failing.
StartLimitIntervalSec=0
Requires=docker.service

[Service]
Type=simple
Environment="NCCL_SOCKET_IFNAME=eth1"
Environment="GLOO_SOCKET_IFNAME=eth1"
Environment="TP_SOCKET_IFNAME=eth1"
Environment="UCX_NET_DEVICES=eth1"
Environment="NCCL_IB_GID_INDEX=3"
Environment="NCCL_IB_DISABLE=1"
Environment="VLLM_HOST_IP=198.19.0.11"
Environment="SGLANG_HOST_IP=198.19.0.11"
Environment="RAY_NODE_IP_ADDRESS=198.19.0.11"
Environment="VLLM_CPU_KVCACHE_SPACE=1"
ExecStartPre="/usr/bin/mkdir" "-p" "/var/lib/blackwell-serving/ray/tiny-ray"
ExecStartPre=-/usr/bin/docker rm -f "bws-tiny-ray-head"
ExecStart=/usr/bin/docker run --rm --name "bws-tiny-ray-head" \
  "--network" \
  "host" \
  "--init" \
  "--shm-size" \
  "2g" \
  "-v" \
  "/var/lib/blackwell-serving/models:/var/lib/blackwell-serving/models:ro" \
  "-v" \
  "/var/lib/blackwell-serving/ray/tiny-ray:/tmp/ray" \
  "-e" \
  "NCCL_SOCKET_IFNAME" \
  "-e" \
  "GLOO_SOCKET_IFNAME" \
  "-e" \
  "TP_SOCKET_IFNAME" \
  "-e" \
  "UCX_NET_DEVICES" \
  "-e" \
  "NCCL_IB_GID_INDEX" \
  "-e" \
  "NCCL_IB_DISABLE" \
  "-e" \
  "VLLM_HOST_IP" \
  "-e" \
  "SGLANG_HOST_IP" \
  "-e" \
  "RAY_NODE_IP_ADDRESS" \
  "-e" \
  "VLLM_CPU_KVCACHE_SPACE" \
  "blackwell-serving/vllm-lab:2b5ceeb6797a" \
  "ray" \
  "start" \
  "--head" \
  "--block" \
  "--node-ip-address=198.19.0.11" \
  "--port=6379" \
  "--object-store-memory=536870912" \
  "--include-dashboard=false" \
  "--disable-usage-stats"
ExecStop=/usr/bin/docker stop -t 30 "bws-tiny-ray-head"
Restart=always
RestartSec=10
TimeoutStartSec=infinity
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
BWS_UNIT_EOF
why=""
if cmp -s "$unit_path.tmp" "$unit_path"; then
  rm -f "$unit_path.tmp"
else
  mv -f "$unit_path.tmp" "$unit_path"
  why="its text changed"
fi
if [ -n "$why" ] || [ "$(systemctl show -p NeedDaemonReload --value bws-tiny-ray-head.service)" = yes ]; then
  systemctl daemon-reload
fi
systemctl enable bws-tiny-ray-head.service >/dev/null 2>&1
if [ -z "$why" ] && ! systemctl is-active --quiet bws-tiny-ray-head.service; then
  why="it is not running"
elif [ -z "$why" ] && [ -f "$record" ]; then
  if [ "$(cat "$record")" != "$inputs" ]; then why="its inputs changed (image or environment)"; fi
elif [ -z "$why" ]; then
  # Installed by an earlier version, which restarted it at each run: it runs what that run
  # wrote,
  # or its container runs an image other than the one its inputs name.
  running=$(docker inspect --format '{{.Image}}' bws-tiny-ray-head 2>/dev/null || true)
  case " $inputs " in
    *" ${running:-none} "*) ;;
    *) why="its container runs another image" ;;
  esac
  if [ -z "$why" ]; then printf '%s\n' "$inputs" > "$record"; fi
fi
if [ -z "$why" ]; then
  log "unchanged and running: not restarted"
else
  log "restarting: $why"
  systemctl restart bws-tiny-ray-head.service
  printf '%s\n' "$inputs" > "$record.tmp"
  mv -f "$record.tmp" "$record"
  sleep 2
  if ! systemctl is-active --quiet bws-tiny-ray-head.service; then
    log "did not stay up; last lines of its journal:"
    journalctl -u bws-tiny-ray-head.service -n 30 --no-pager >&2 || true
    exit 1
  fi
  log "active"
fi
# This start's identity: the gates that check what the unit serves run again after every restart
# done here (components/unit.py: SystemdUnit.started); unchanged when nothing was restarted.
echo "started=$(systemctl show -p InvocationID --value bws-tiny-ray-head.service)"
