#!/usr/bin/env bash
# Remove a unit we own: stop, disable, delete its file and its environment file.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'unit bws-qwen35.service' "$*" >&2; }
systemctl disable --now bws-qwen35.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-qwen35.service
rm -f /etc/blackwell-serving/qwen35.env
systemctl daemon-reload
systemctl reset-failed bws-qwen35.service >/dev/null 2>&1 || true
log "removed"
