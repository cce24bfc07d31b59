#!/usr/bin/env bash
# Remove a unit we own: stop, disable, delete its file and its environment file.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'unit bws-tiny-b.service' "$*" >&2; }
systemctl disable --now bws-tiny-b.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-tiny-b.service
rm -f /etc/blackwell-serving/tiny-b.env
systemctl daemon-reload
systemctl reset-failed bws-tiny-b.service >/dev/null 2>&1 || true
log "removed"
