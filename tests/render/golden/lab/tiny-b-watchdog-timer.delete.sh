#!/usr/bin/env bash
# Disarm a deployment's watchdog and remove its files.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'watchdog tiny-b' "$*" >&2; }
systemctl disable --now bws-tiny-b-watchdog.timer >/dev/null 2>&1 || true
systemctl stop bws-tiny-b-watchdog.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-tiny-b-watchdog.timer /etc/systemd/system/bws-tiny-b-watchdog.service /var/lib/blackwell-serving/watchdog/tiny-b.sh
rm -f /run/blackwell-serving/watchdog/tiny-b.failures /run/blackwell-serving/watchdog/tiny-b.answered
systemctl daemon-reload
systemctl reset-failed bws-tiny-b-watchdog.service bws-tiny-b-watchdog.timer >/dev/null 2>&1 || true
log "removed"
