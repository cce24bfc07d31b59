#!/usr/bin/env bash
# The benchmark after the health gate: benchmark_engine.py (sent on stdin) against the real
# endpoint on this node's loopback, as the health gate asks it. Prints decode-tok-s, ttft-ms,
# aggregate-tok-s and concurrency as key=value lines, the stack output `benchmark`. The API key
# stays in its root-only env file: the program reads it there (its path is all argv carries).
# Engine units measured: e015b2497c81 (a new engine means a new measurement).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'benchmark qwen35-397b' "$*" >&2; }
script=$(mktemp)
trap 'rm -f "$script"' EXIT
cat > "$script"
# Runtime venv: its python (the node may have no python3 of its own).
/opt/blackwell-serving/venvs/sglang-main/current/bin/python3 "$script" http://127.0.0.1:30000 qwen3.5-397b 4 '[]' 128 4 900 - /etc/blackwell-serving/qwen35-397b.env SGLANG_API_KEY
