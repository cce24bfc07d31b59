#!/usr/bin/env bash
# Disarm a deployment's watchdog and remove its files.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'watchdog tiny-rank1' "$*" >&2; }
systemctl disable --now bws-tiny-rank1-watch.timer >/dev/null 2>&1 || true
systemctl stop bws-tiny-rank1-watch.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/bws-tiny-rank1-watch.timer /etc/systemd/system/bws-tiny-rank1-watch.service /var/lib/blackwell-serving/watchdog/tiny-rank1.sh
rm -f /run/blackwell-serving/watchdog/tiny-rank1.failures /run/blackwell-serving/watchdog/tiny-rank1.joined
systemctl daemon-reload
systemctl reset-failed bws-tiny-rank1-watch.service bws-tiny-rank1-watch.timer >/dev/null 2>&1 || true
log "removed"
