#!/usr/bin/env bash
# Preflight, before any unit is stopped: the engine image knows the model (probe_engine.py,
# sent on stdin and run inside the image against the cached model's config.json). Its findings
# go to stderr, where a failure's message is taken from.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'preflight tiny-b' "$*" >&2; }
if ! docker run -i --rm --network none -v /var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1:/var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1:ro \
     --entrypoint python3 blackwell-serving/vllm-lab:2b5ceeb6797a - vllm /var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1 >&2; then
  log "the engine image cannot serve this model (above); nothing was stopped"
  exit 1
fi
log "engine knows the model"
