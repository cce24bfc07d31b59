#!/usr/bin/env bash
# Disarm a deployment's watchdog and remove its files.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'watchdog qwen35-rank1' "$*" >&2; }
systemctl disable --now bws-qwen35-rank1-watch.timer >/dev/null 2>&1 || true
systemctl stop bws-qwen35-rank1-watch.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-qwen35-rank1-watch.timer /etc/systemd/system/bws-qwen35-rank1-watch.service /var/lib/blackwell-serving/watchdog/qwen35-rank1.sh
rm -f /run/blackwell-serving/watchdog/qwen35-rank1.failures /run/blackwell-serving/watchdog/qwen35-rank1.joined
systemctl daemon-reload
systemctl reset-failed bws-qwen35-rank1-watch.service bws-qwen35-rank1-watch.timer >/dev/null 2>&1 || true
log "removed"
