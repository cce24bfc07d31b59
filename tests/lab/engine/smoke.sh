#!/usr/bin/env bash
# Serve the tiny model with the lab's engine image on this host and send one real chat completion.
# Usage: smoke.sh [IMAGE]   (default: the base engine image prepare.sh builds)
# Prints the seconds until /v1/models answered and the completion's JSON; exits non-zero on failure.
# Port 18080 on 127.0.0.1; the container is removed on exit.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
IMAGE=${1:-198.18.0.1:5000/lab/vllm-cpu:0.32.0}
MODEL_DIR="$(dirname "$HERE")/.state/tiny-model"
PORT=${SMOKE_PORT:-18080}
NAME="bws-engine-smoke-$$"

[[ -s "${MODEL_DIR}/config.json" ]] || { echo "no model in $MODEL_DIR: run prepare.sh" >&2; exit 1; }

cleanup() { docker rm -f "$NAME" >/dev/null 2>&1 || true; }
trap cleanup EXIT

start=$SECONDS
docker run -d --name "$NAME" --network host --ipc host -e VLLM_CPU_KVCACHE_SPACE=1 \
  -v "${MODEL_DIR}:/model:ro" "$IMAGE" \
  python -m vllm.entrypoints.openai.api_server --model /model --served-model-name tiny \
  --port "$PORT" --host 127.0.0.1 --max-model-len 256 --enforce-eager --dtype bfloat16 >/dev/null

until curl -sf "http://127.0.0.1:${PORT}/v1/models" >/dev/null; do
  if [[ "$(docker inspect -f '{{ .State.Running }}' "$NAME")" != true ]] || ((SECONDS - start > 600)); then
    docker logs --tail 40 "$NAME" >&2
    echo "engine did not come up" >&2
    exit 1
  fi
  sleep 1
done
echo "/v1/models answered after $((SECONDS - start)) s"

curl -sf "http://127.0.0.1:${PORT}/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"model": "tiny", "messages": [{"role": "user", "content": "Hello! How are you?"}],
       "max_tokens": 16, "temperature": 0}'
echo
