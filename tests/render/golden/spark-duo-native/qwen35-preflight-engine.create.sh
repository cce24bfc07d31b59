#!/usr/bin/env bash
# Preflight, before any unit is stopped: the engine image knows the model (probe_engine.py,
# sent on stdin and run inside the image against the cached model's config.json). Its findings
# go to stderr, where a failure's message is taken from.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'preflight qwen35' "$*" >&2; }
if ! docker run -i --rm --network none -v /var/lib/blackwell-serving/models/Qwen--Qwen3.5-122B-A10B-FP8--0000000000000000000000000000000000000000:/var/lib/blackwell-serving/models/Qwen--Qwen3.5-122B-A10B-FP8--0000000000000000000000000000000000000000:ro \
     --entrypoint python3 hellohal2064/vllm-qwen3.5-gb10:latest - vllm /var/lib/blackwell-serving/models/Qwen--Qwen3.5-122B-A10B-FP8--0000000000000000000000000000000000000000 >&2; then
  log "the engine image cannot serve this model (above); nothing was stopped"
  exit 1
fi
log "engine knows the model"
