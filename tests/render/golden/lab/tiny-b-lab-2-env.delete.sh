#!/usr/bin/env bash
# Remove the EnvironmentFile of a unit we own (its unit is removed first: it depends on this).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'env bws-tiny-b.service' "$*" >&2; }
rm -f /etc/blackwell-serving/tiny-b.env /etc/blackwell-serving/tiny-b.env.generation /etc/blackwell-serving/tiny-b.env.tmp
log "removed"
