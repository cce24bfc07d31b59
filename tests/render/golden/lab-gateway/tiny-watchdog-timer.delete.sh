#!/usr/bin/env bash
# Disarm a deployment's watchdog and remove its files.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'watchdog tiny' "$*" >&2; }
systemctl disable --now bws-tiny-watchdog.timer >/dev/null 2>&1 || true
systemctl stop bws-tiny-watchdog.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-tiny-watchdog.timer /etc/systemd/system/bws-tiny-watchdog.service /var/lib/blackwell-serving/watchdog/tiny.sh
rm -f /run/blackwell-serving/watchdog/tiny.failures /run/blackwell-serving/watchdog/tiny.answered
systemctl daemon-reload
systemctl reset-failed bws-tiny-watchdog.service bws-tiny-watchdog.timer >/dev/null 2>&1 || true
log "removed"
