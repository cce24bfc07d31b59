#!/usr/bin/env bash
# Remove a unit we own: stop, disable, delete its file and the record of what it started with
# (its environment file is its env step's: removed after it).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'unit bws-qwen35-397b.service' "$*" >&2; }
systemctl disable --now bws-qwen35-397b.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-qwen35-397b.service /var/lib/blackwell-serving/units/bws-qwen35-397b.service.inputs
systemctl daemon-reload
systemctl reset-failed bws-qwen35-397b.service >/dev/null 2>&1 || true
log "removed"
