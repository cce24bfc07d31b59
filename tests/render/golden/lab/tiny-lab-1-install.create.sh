#!/usr/bin/env bash
# Install (or update) a systemd unit we own, then (re)start it. The engine runs this only when
# the unit's content changed, so a converged node never sees a restart.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'unit bws-tiny.service' "$*" >&2; }
unit_path=/etc/systemd/system/bws-tiny.service
env_path=/etc/blackwell-serving/tiny.env
install -d -m 0700 "$(dirname "$env_path")"
# Secrets arrive on stdin only; written root-only, then moved into place.
umask 077
cat > "$env_path.tmp"
chmod 0600 "$env_path.tmp"
mv -f "$env_path.tmp" "$env_path"
umask 022
cat > "$unit_path.tmp" <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Deployment tiny); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving vllm tiny (rank 0)
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
Environment="HF_HUB_OFFLINE=1"
Environment="VLLM_CPU_KVCACHE_SPACE=1"
Environment="OMP_NUM_THREADS=1"
Environment="VLLM_CPU_OMP_THREADS_BIND=nobind"
ExecStartPre=-/usr/bin/docker rm -f "bws-tiny"
ExecStart=/usr/bin/docker run --rm --name "bws-tiny" \
  "--network" \
  "host" \
  "--init" \
  "--shm-size" \
  "2g" \
  "-v" \
  "/var/lib/blackwell-serving/models:/var/lib/blackwell-serving/models:ro" \
  "-v" \
  "/etc/blackwell-serving/tiny.env:/run/secrets/blackwell-serving.env:ro" \
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
  "HF_HUB_OFFLINE" \
  "-e" \
  "VLLM_CPU_KVCACHE_SPACE" \
  "-e" \
  "OMP_NUM_THREADS" \
  "-e" \
  "VLLM_CPU_OMP_THREADS_BIND" \
  "blackwell-serving/vllm-lab:2b5ceeb6797a" \
  "/bin/sh" \
  "-c" \
  "while IFS= read -r kv; do export \"$$kv\"; done < /run/secrets/blackwell-serving.env && exec \"$$@\"" \
  "engine" \
  "vllm" \
  "serve" \
  "/var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1" \
  "--served-model-name" \
  "tiny-llama" \
  "--host" \
  "0.0.0.0" \
  "--port" \
  "8000" \
  "--tensor-parallel-size" \
  "2" \
  "--pipeline-parallel-size" \
  "1" \
  "--gpu-memory-utilization" \
  "0.8" \
  "--max-model-len" \
  "256" \
  "--kv-cache-dtype" \
  "auto" \
  "--nnodes" \
  "2" \
  "--node-rank" \
  "0" \
  "--master-addr" \
  "198.19.0.11" \
  "--master-port" \
  "20000" \
  "--compilation-config" \
  "{\"mode\":2,\"backend\":\"eager\"}" \
  "--dtype" \
  "bfloat16"
ExecStop=/usr/bin/docker stop -t 30 "bws-tiny"
Restart=always
RestartSec=10
TimeoutStartSec=infinity
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
BWS_UNIT_EOF
mv -f "$unit_path.tmp" "$unit_path"
systemctl daemon-reload
systemctl enable bws-tiny.service >/dev/null 2>&1
log "restarting"
systemctl restart bws-tiny.service
sleep 2
if ! systemctl is-active --quiet bws-tiny.service; then
  log "did not stay up; last lines of its journal:"
  journalctl -u bws-tiny.service -n 30 --no-pager >&2 || true
  exit 1
fi
log "active"
# This start's identity: the gates that check what the unit serves run again after every restart
# done here (components/unit.py: SystemdUnit.started).
echo "started=$(systemctl show -p InvocationID --value bws-tiny.service)"
