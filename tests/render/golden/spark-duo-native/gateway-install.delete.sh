#!/usr/bin/env bash
# Remove the gateway: stop, disable, delete its unit, its keys and its routes.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'gateway bws-gateway.service' "$*" >&2; }
systemctl disable --now bws-gateway.service >/dev/null 2>&1 || true
docker rm -f bws-gateway >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-gateway.service /etc/blackwell-serving/gateway.env
rm -rf /etc/blackwell-serving/gateway
systemctl daemon-reload
systemctl reset-failed bws-gateway.service >/dev/null 2>&1 || true
log "removed"
