#!/usr/bin/env bash
# Remove a unit we own: stop, disable, delete its file and its environment file.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'unit bws-qwen35-397b.service' "$*" >&2; }
systemctl disable --now bws-qwen35-397b.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-qwen35-397b.service
rm -f /etc/blackwell-serving/qwen35-397b.env
systemctl daemon-reload
systemctl reset-failed bws-qwen35-397b.service >/dev/null 2>&1 || true
log "removed"
