#!/usr/bin/env bash
# Remove a unit we own: stop, disable, delete its file and its environment file.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'unit bws-tiny.service' "$*" >&2; }
systemctl disable --now bws-tiny.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-tiny.service
rm -f /etc/blackwell-serving/tiny.env
systemctl daemon-reload
systemctl reset-failed bws-tiny.service >/dev/null 2>&1 || true
log "removed"
