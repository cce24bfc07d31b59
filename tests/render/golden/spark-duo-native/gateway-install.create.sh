#!/usr/bin/env bash
# Install (or update) the gateway: its keys (stdin), its routes (the LiteLLM config) and its unit,
# then restart it. The engine runs this only when the routes, the keys, the unit or the image
# changed; the engines' units are other steps and are not touched.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'gateway bws-gateway.service' "$*" >&2; }
unit_path=/etc/systemd/system/bws-gateway.service
env_path=/etc/blackwell-serving/gateway.env
config_dir=/etc/blackwell-serving/gateway
config_path=/etc/blackwell-serving/gateway/litellm.yaml
install -d -m 0700 "$(dirname "$env_path")" "$config_dir"
umask 077
# Secrets arrive on stdin only; written root-only, then moved into place.
cat > "$env_path.tmp"
chmod 0600 "$env_path.tmp"
mv -f "$env_path.tmp" "$env_path"
# The routes: root-only too, mounted read-only into the container.
cat > "$config_path.tmp" <<'BWS_GATEWAY_CONFIG_EOF'
# Managed by blackwell-serving (Gateway): LiteLLM proxy routes, one per model name, written by
# `pulumi up` when they change (do not edit on the node). No secret here: every key is
# `os.environ/VAR`, a line of the root-only env file mounted beside it.
model_list:
  # deployment qwen35
  - model_name: "qwen3.5-122b"
    litellm_params:
      model: "openai/qwen3.5-122b"
      api_base: "http://127.0.0.1:8000/v1"
      api_key: "os.environ/BWS_DEPLOYMENT_KEY_QWEN35"
      timeout: 600
      stream_timeout: 600
    model_info:
      mode: "chat"
  # upstream embeddings
  - model_name: "embeddings"
    litellm_params:
      model: "openai/embeddings"
      api_base: "http://192.168.200.13:8001/v1"
      api_key: "none"
      timeout: 600
      stream_timeout: 600
    model_info:
      mode: "embedding"
litellm_settings:
  telemetry: false
  request_timeout: 600
  # An upstream's error is the client's answer: no retry on another route.
  num_retries: 0
general_settings:
  master_key: "os.environ/LITELLM_MASTER_KEY"
BWS_GATEWAY_CONFIG_EOF
chmod 0600 "$config_path.tmp"
mv -f "$config_path.tmp" "$config_path"
umask 022
cat > "$unit_path.tmp" <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Gateway); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving gateway (LiteLLM) on port 4000
After=docker.service network-online.target
Wants=network-online.target
# Never give up restarting (the RestartSec below spaces the tries; systemd 254+ could grow it,
# Debian 12's 252 cannot): the watchdog and the preview report an engine that keeps failing.
StartLimitIntervalSec=0
Requires=docker.service

[Service]
Type=simple
Environment="LITELLM_LOCAL_MODEL_COST_MAP=True"
Environment="LITELLM_TELEMETRY=False"
ExecStartPre=-/usr/bin/docker rm -f "bws-gateway"
ExecStart=/usr/bin/docker run --rm --name "bws-gateway" \
  "--network" \
  "host" \
  "--init" \
  "-v" \
  "/etc/blackwell-serving/gateway/litellm.yaml:/etc/litellm/config.yaml:ro" \
  "-v" \
  "/etc/blackwell-serving/gateway.env:/run/secrets/blackwell-serving.env:ro" \
  "--label" \
  "org.blackwell-serving.gateway-config=ad9e8332363c" \
  "-e" \
  "LITELLM_LOCAL_MODEL_COST_MAP" \
  "-e" \
  "LITELLM_TELEMETRY" \
  "blackwell-serving/gateway:c2860cdd73d4" \
  "/bin/sh" \
  "-c" \
  "while IFS= read -r kv; do export \"$$kv\"; done < /run/secrets/blackwell-serving.env && exec \"$$@\"" \
  "gateway" \
  "litellm" \
  "--config" \
  "/etc/litellm/config.yaml" \
  "--host" \
  "0.0.0.0" \
  "--port" \
  "4000" \
  "--num_workers" \
  "1"
ExecStop=/usr/bin/docker stop -t 30 "bws-gateway"
Restart=on-failure
RestartSec=10
TimeoutStartSec=infinity
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
BWS_UNIT_EOF
mv -f "$unit_path.tmp" "$unit_path"
systemctl daemon-reload
systemctl enable bws-gateway.service >/dev/null 2>&1
log "restarting (routes $(sha256sum "$config_path" | cut -c1-12))"
systemctl restart bws-gateway.service
sleep 2
if ! systemctl is-active --quiet bws-gateway.service; then
  log "did not stay up; last lines of its journal:"
  journalctl -u bws-gateway.service -n 30 --no-pager >&2 || true
  exit 1
fi
log "active"
# This start's identity: the gateway's gate runs again after every restart done here.
echo "started=$(systemctl show -p InvocationID --value bws-gateway.service)"
