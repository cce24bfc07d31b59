#!/usr/bin/env bash
# Disarm a deployment's watchdog and remove its files.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'watchdog qwen35-sglang' "$*" >&2; }
systemctl disable --now bws-qwen35-sglang-watchdog.timer >/dev/null 2>&1 || true
systemctl stop bws-qwen35-sglang-watchdog.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-qwen35-sglang-watchdog.timer /etc/systemd/system/bws-qwen35-sglang-watchdog.service /var/lib/blackwell-serving/watchdog/qwen35-sglang.sh
rm -f /run/blackwell-serving/watchdog/qwen35-sglang.failures /run/blackwell-serving/watchdog/qwen35-sglang.answered
systemctl daemon-reload
systemctl reset-failed bws-qwen35-sglang-watchdog.service bws-qwen35-sglang-watchdog.timer >/dev/null 2>&1 || true
log "removed"
