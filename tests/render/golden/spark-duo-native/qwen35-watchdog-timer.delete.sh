#!/usr/bin/env bash
# Disarm a deployment's watchdog and remove its files.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'watchdog qwen35' "$*" >&2; }
systemctl disable --now bws-qwen35-watchdog.timer >/dev/null 2>&1 || true
systemctl stop bws-qwen35-watchdog.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-qwen35-watchdog.timer /etc/systemd/system/bws-qwen35-watchdog.service /var/lib/blackwell-serving/watchdog/qwen35.sh
rm -f /run/blackwell-serving/watchdog/qwen35.failures /run/blackwell-serving/watchdog/qwen35.answered
systemctl daemon-reload
systemctl reset-failed bws-qwen35-watchdog.service bws-qwen35-watchdog.timer >/dev/null 2>&1 || true
log "removed"
