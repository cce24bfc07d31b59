#!/usr/bin/env bash
# Remove the gateway: stop, disable, delete its unit and its routes (its keys are its env
# step's: removed after it).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'gateway bws-gateway.service' "$*" >&2; }
systemctl disable --now bws-gateway.service >/dev/null 2>&1 || true
docker rm -f bws-gateway >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-gateway.service
rm -rf /etc/blackwell-serving/gateway
systemctl daemon-reload
systemctl reset-failed bws-gateway.service >/dev/null 2>&1 || true
log "removed"
