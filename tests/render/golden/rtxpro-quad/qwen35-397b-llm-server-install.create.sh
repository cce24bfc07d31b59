#!/usr/bin/env bash
# Install (or update) a systemd unit we own, then (re)start it — only when something it runs
# changed: its text (compared with the file on the node before moving into place), the inputs
# it started with (the step's triggers, BWS_INPUTS: the image ID, its secret environment's
# generation), or it is not running. A re-run for any other reason (a new version of this script)
# restarts nothing. Its secrets are another step's (install-env.sh.j2), never on this one's stdin.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'unit bws-qwen35-397b.service' "$*" >&2; }
unit_path=/etc/systemd/system/bws-qwen35-397b.service
# The triggers the running unit was started with (written at each restart done here).
record_dir=/var/lib/blackwell-serving/units
record="$record_dir"/bws-qwen35-397b.service.inputs
inputs="${BWS_INPUTS-}"
install -d -m 0755 "$record_dir"
cat > "$unit_path.tmp" <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Deployment qwen35-397b); edits are drift and are reverted by `pulumi up`.
# The engine runs from the venv in use (/opt/blackwell-serving/venvs/sglang-main/current), without a container.
[Unit]
Description=blackwell-serving sglang qwen35-397b
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
Environment="HF_HUB_OFFLINE=1"
EnvironmentFile=/etc/blackwell-serving/qwen35-397b.env
ExecStart=/opt/blackwell-serving/venvs/sglang-main/current/bin/python3 \
  "-m" \
  "sglang.launch_server" \
  "--model-path" \
  "/var/lib/blackwell-serving/models/nvidia--Qwen3.5-397B-A17B-NVFP4--0000000000000000000000000000000000000000" \
  "--served-model-name" \
  "qwen3.5-397b" \
  "--host" \
  "0.0.0.0" \
  "--port" \
  "30000" \
  "--tp" \
  "4" \
  "--mem-fraction-static" \
  "0.85" \
  "--context-length" \
  "262144" \
  "--kv-cache-dtype" \
  "auto" \
  "--quantization" \
  "modelopt_fp4" \
  "--moe-runner-backend" \
  "flashinfer_cutlass" \
  "--tool-call-parser" \
  "qwen3_coder" \
  "--reasoning-parser" \
  "qwen3" \
  "--enable-hierarchical-cache" \
  "--hicache-ratio" \
  "4.0" \
  "--enable-metrics" \
  "--fp4-gemm-runner-backend" \
  "flashinfer_cudnn"
KillMode=control-group
Restart=on-failure
RestartSec=10
TimeoutStartSec=infinity
TimeoutStopSec=60
LimitMEMLOCK=infinity
LimitNOFILE=1048576

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
if [ -n "$why" ] || [ "$(systemctl show -p NeedDaemonReload --value bws-qwen35-397b.service)" = yes ]; then
  systemctl daemon-reload
fi
systemctl enable bws-qwen35-397b.service >/dev/null 2>&1
if [ -z "$why" ] && ! systemctl is-active --quiet bws-qwen35-397b.service; then
  why="it is not running"
elif [ -z "$why" ] && [ -f "$record" ]; then
  if [ "$(cat "$record")" != "$inputs" ]; then why="its inputs changed (image or environment)"; fi
elif [ -z "$why" ]; then
  # Installed by an earlier version, which restarted it at each run: it runs what that run
  # wrote, unless its environment file was rewritten after it started.
  env_path=/etc/blackwell-serving/qwen35-397b.env
  since=$(date -d "$(systemctl show -p ActiveEnterTimestamp --value bws-qwen35-397b.service)" +%s 2>/dev/null || echo 0)
  if [ ! -f "$env_path" ] || [ "$(stat -c %Y "$env_path")" -gt "$since" ]; then
    why="its environment changed"
  fi
  if [ -z "$why" ]; then printf '%s\n' "$inputs" > "$record"; fi
fi
if [ -z "$why" ]; then
  log "unchanged and running: not restarted"
else
  log "restarting: $why"
  systemctl restart bws-qwen35-397b.service
  printf '%s\n' "$inputs" > "$record.tmp"
  mv -f "$record.tmp" "$record"
  sleep 2
  if ! systemctl is-active --quiet bws-qwen35-397b.service; then
    log "did not stay up; last lines of its journal:"
    journalctl -u bws-qwen35-397b.service -n 30 --no-pager >&2 || true
    exit 1
  fi
  log "active"
fi
# This start's identity: the gates that check what the unit serves run again after every restart
# done here (components/unit.py: SystemdUnit.started); unchanged when nothing was restarted.
echo "started=$(systemctl show -p InvocationID --value bws-qwen35-397b.service)"
