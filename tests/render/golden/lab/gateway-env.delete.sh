#!/usr/bin/env bash
# Remove the EnvironmentFile of a unit we own (its unit is removed first: it depends on this).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'env bws-gateway.service' "$*" >&2; }
rm -f /etc/blackwell-serving/gateway.env /etc/blackwell-serving/gateway.env.generation /etc/blackwell-serving/gateway.env.tmp
log "removed"
