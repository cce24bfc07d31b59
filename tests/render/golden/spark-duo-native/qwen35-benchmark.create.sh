#!/usr/bin/env bash
# The benchmark after the health gate: benchmark_engine.py (sent on stdin) against the real
# endpoint on this node's loopback, as the health gate asks it. Prints decode-tok-s, ttft-ms,
# aggregate-tok-s and concurrency as key=value lines, the stack output `benchmark`. The API key
# stays in its root-only env file: the program reads it there (its path is all argv carries).
# Engine units measured: 5ea6f05fe636 (a new engine means a new measurement).
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'benchmark qwen35' "$*" >&2; }
script=$(mktemp)
trap 'rm -f "$script"' EXIT
cat > "$script"
if command -v python3 >/dev/null 2>&1; then
  python3 "$script" http://127.0.0.1:8000 qwen3.5-122b 4 '[]' 128 4 900 - /etc/blackwell-serving/qwen35.env VLLM_API_KEY
else
  # No python3 on the node: the engine image's, on the host's network, the key file mounted read-only.
  docker run -i --rm --network host -v /etc/blackwell-serving/qwen35.env:/run/secrets/blackwell-serving-benchmark.env:ro \
    --entrypoint python3 hellohal2064/vllm-qwen3.5-gb10:latest - http://127.0.0.1:8000 qwen3.5-122b 4 '[]' 128 4 900 - /run/secrets/blackwell-serving-benchmark.env VLLM_API_KEY < "$script"
fi
