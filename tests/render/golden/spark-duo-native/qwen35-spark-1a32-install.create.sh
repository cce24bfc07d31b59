#!/usr/bin/env bash
# Install (or update) a systemd unit we own, then (re)start it. The engine runs this only when
# the unit's content changed, so a converged node never sees a restart.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'unit bws-qwen35.service' "$*" >&2; }
unit_path=/etc/systemd/system/bws-qwen35.service
env_path=/etc/blackwell-serving/qwen35.env
install -d -m 0700 "$(dirname "$env_path")"
# Secrets arrive on stdin only; written root-only, then moved into place.
umask 077
cat > "$env_path.tmp"
chmod 0600 "$env_path.tmp"
mv -f "$env_path.tmp" "$env_path"
umask 022
cat > "$unit_path.tmp" <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Deployment qwen35); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving vllm qwen35 (rank 0)
After=docker.service network-online.target
Wants=network-online.target
# Never give up restarting (the RestartSec below spaces the tries; systemd 254+ could grow it,
# Debian 12's 252 cannot): the watchdog and the preview report an engine that keeps failing.
StartLimitIntervalSec=0
Requires=docker.service

[Service]
Type=simple
Environment="NCCL_SOCKET_IFNAME=enp1s0f1np1"
Environment="GLOO_SOCKET_IFNAME=enp1s0f1np1"
Environment="TP_SOCKET_IFNAME=enp1s0f1np1"
Environment="UCX_NET_DEVICES=enp1s0f1np1"
Environment="NCCL_IB_GID_INDEX=3"
Environment="NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1"
Environment="VLLM_HOST_IP=192.168.200.12"
Environment="SGLANG_HOST_IP=192.168.200.12"
Environment="RAY_NODE_IP_ADDRESS=192.168.200.12"
Environment="HF_HUB_OFFLINE=1"
Environment="VLLM_ATTENTION_BACKEND=FLASHINFER"
ExecStartPre="/bin/sh" "-c" "sync && echo 3 > /proc/sys/vm/drop_caches"
ExecStartPre=-/usr/bin/docker rm -f "bws-qwen35"
ExecStart=/usr/bin/docker run --rm --name "bws-qwen35" \
  "--network" \
  "host" \
  "--ipc" \
  "host" \
  "--gpus" \
  "all" \
  "--init" \
  "--shm-size" \
  "32g" \
  "--ulimit" \
  "memlock=-1:-1" \
  "--device" \
  "/dev/infiniband" \
  "--cap-add" \
  "IPC_LOCK" \
  "-v" \
  "/var/lib/blackwell-serving/models:/var/lib/blackwell-serving/models:ro" \
  "-v" \
  "/etc/blackwell-serving/qwen35.env:/run/secrets/blackwell-serving.env:ro" \
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
  "NCCL_IB_HCA" \
  "-e" \
  "VLLM_HOST_IP" \
  "-e" \
  "SGLANG_HOST_IP" \
  "-e" \
  "RAY_NODE_IP_ADDRESS" \
  "-e" \
  "HF_HUB_OFFLINE" \
  "-e" \
  "VLLM_ATTENTION_BACKEND" \
  "hellohal2064/vllm-qwen3.5-gb10:latest" \
  "/bin/sh" \
  "-c" \
  "while IFS= read -r kv; do export \"$$kv\"; done < /run/secrets/blackwell-serving.env && exec \"$$@\"" \
  "engine" \
  "vllm" \
  "serve" \
  "/var/lib/blackwell-serving/models/Qwen--Qwen3.5-122B-A10B-FP8--0000000000000000000000000000000000000000" \
  "--served-model-name" \
  "qwen3.5-122b" \
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
  "131072" \
  "--kv-cache-dtype" \
  "fp8" \
  "--nnodes" \
  "2" \
  "--node-rank" \
  "0" \
  "--master-addr" \
  "192.168.200.12" \
  "--master-port" \
  "29501" \
  "--enable-auto-tool-choice" \
  "--tool-call-parser" \
  "qwen3_coder" \
  "--reasoning-parser" \
  "qwen3"
ExecStop=/usr/bin/docker stop -t 30 "bws-qwen35"
Restart=always
RestartSec=10
TimeoutStartSec=infinity
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
BWS_UNIT_EOF
mv -f "$unit_path.tmp" "$unit_path"
systemctl daemon-reload
systemctl enable bws-qwen35.service >/dev/null 2>&1
log "restarting"
systemctl restart bws-qwen35.service
sleep 2
if ! systemctl is-active --quiet bws-qwen35.service; then
  log "did not stay up; last lines of its journal:"
  journalctl -u bws-qwen35.service -n 30 --no-pager >&2 || true
  exit 1
fi
log "active"
# This start's identity: the gates that check what the unit serves run again after every restart
# done here (components/unit.py: SystemdUnit.started).
echo "started=$(systemctl show -p InvocationID --value bws-qwen35.service)"
