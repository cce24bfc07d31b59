#!/usr/bin/env bash
# Remove the EnvironmentFile of a unit we own (its unit is removed first: it depends on this).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'env bws-qwen35-397b.service' "$*" >&2; }
rm -f /etc/blackwell-serving/qwen35-397b.env /etc/blackwell-serving/qwen35-397b.env.generation /etc/blackwell-serving/qwen35-397b.env.tmp
log "removed"
