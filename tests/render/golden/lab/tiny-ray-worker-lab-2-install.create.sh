#!/usr/bin/env bash
# Install (or update) a systemd unit we own, then (re)start it. The engine runs this only when
# the unit's content changed, so a converged node never sees a restart.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'unit bws-tiny-ray-worker.service' "$*" >&2; }
unit_path=/etc/systemd/system/bws-tiny-ray-worker.service
cat > "$unit_path.tmp" <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (RayCluster tiny-ray); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving Ray worker (tiny-ray)
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
Environment="VLLM_HOST_IP=198.19.0.12"
Environment="SGLANG_HOST_IP=198.19.0.12"
Environment="RAY_NODE_IP_ADDRESS=198.19.0.12"
Environment="VLLM_CPU_KVCACHE_SPACE=1"
ExecStartPre="/usr/bin/mkdir" "-p" "/var/lib/blackwell-serving/ray/tiny-ray"
ExecStartPre="/bin/bash" "-c" "end=$$((SECONDS + $$3)); until (exec 3<>\"/dev/tcp/$$1/$$2\") 2>/dev/null; do if [ \"$$SECONDS\" -ge \"$$end\" ]; then echo \"Ray head $$1:$$2 did not answer in $$3 s\" >&2; exit 1; fi; sleep 2; done" "wait-for-ray-head" "198.19.0.11" "6379" "300"
ExecStartPre=-/usr/bin/docker rm -f "bws-tiny-ray-worker"
ExecStart=/usr/bin/docker run --rm --name "bws-tiny-ray-worker" \
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
  "--block" \
  "--address=198.19.0.11:6379" \
  "--node-ip-address=198.19.0.12" \
  "--object-store-memory=536870912" \
  "--disable-usage-stats"
ExecStop=/usr/bin/docker stop -t 30 "bws-tiny-ray-worker"
Restart=always
RestartSec=10
TimeoutStartSec=infinity
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
BWS_UNIT_EOF
mv -f "$unit_path.tmp" "$unit_path"
systemctl daemon-reload
systemctl enable bws-tiny-ray-worker.service >/dev/null 2>&1
log "restarting"
systemctl restart bws-tiny-ray-worker.service
sleep 2
if ! systemctl is-active --quiet bws-tiny-ray-worker.service; then
  log "did not stay up; last lines of its journal:"
  journalctl -u bws-tiny-ray-worker.service -n 30 --no-pager >&2 || true
  exit 1
fi
log "active"
# This start's identity: the gates that check what the unit serves run again after every restart
# done here (components/unit.py: SystemdUnit.started).
echo "started=$(systemctl show -p InvocationID --value bws-tiny-ray-worker.service)"
