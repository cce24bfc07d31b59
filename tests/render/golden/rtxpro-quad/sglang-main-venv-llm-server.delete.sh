#!/usr/bin/env bash
# Remove every venv this image entry built on the node (its units are gone first: they depend on
# it), and the directory that held them.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'venv sglang-main' "$*" >&2; }
rm -rf /opt/blackwell-serving/venvs/sglang-main
log "removed"
