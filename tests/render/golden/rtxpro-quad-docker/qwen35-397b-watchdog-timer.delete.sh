#!/usr/bin/env bash
# Disarm a deployment's watchdog and remove its files.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'watchdog qwen35-397b' "$*" >&2; }
systemctl disable --now bws-qwen35-397b-watchdog.timer >/dev/null 2>&1 || true
systemctl stop bws-qwen35-397b-watchdog.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-qwen35-397b-watchdog.timer /etc/systemd/system/bws-qwen35-397b-watchdog.service /var/lib/blackwell-serving/watchdog/qwen35-397b.sh
rm -f /run/blackwell-serving/watchdog/qwen35-397b.failures /run/blackwell-serving/watchdog/qwen35-397b.answered
systemctl daemon-reload
systemctl reset-failed bws-qwen35-397b-watchdog.service bws-qwen35-397b-watchdog.timer >/dev/null 2>&1 || true
log "removed"
