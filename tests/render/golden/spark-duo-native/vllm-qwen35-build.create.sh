#!/usr/bin/env bash
# Build the derived engine image on its build node (or only pull the base when nothing is
# added). The tag is the content address of the Dockerfile, and the image records the ID of the
# base it was built on: an existing tag over the same base means the work is done; a base that
# moved (a mutable tag re-pushed) means a rebuild. The image is built under a staging tag and
# tagged for real only once built: nothing half-built carries the real tag.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'image hellohal2064/vllm-qwen3.5-gb10:latest' "$*" >&2; }
progress_log=/var/log/blackwell-serving/image-hellohal2064-vllm-qwen3.5-gb10-latest.log
progress() {
  mkdir -p "$(dirname "$progress_log")"
  if [ -z "${progress_told:-}" ]; then
    progress_told=1
    log "full output in $progress_log"
  fi
  tee -a "$progress_log" | awk -v shown=-1 -v RS='[\r\n]+' '
    /^\[blackwell / { print; fflush(); next }
    match($0, /[0-9]+(\.[0-9]+)?%/) {
      p = substr($0, RSTART, RLENGTH - 1) + 0
      if (p <= 100 && int(p / 10) > shown) { shown = int(p / 10); print; fflush() }
      next
    }
    /^(Loaded image|#[0-9]+ \[|Step [0-9]+\/[0-9]+|Successfully (built|tagged))/ { print; fflush() }
  ' >&2
}
log "pulling base image"
if ! docker pull hellohal2064/vllm-qwen3.5-gb10:latest 2>&1 | progress; then
  docker image inspect hellohal2064/vllm-qwen3.5-gb10:latest >/dev/null 2>&1 || { log "cannot pull the base image"; exit 1; }
  log "registry unreachable; using the base image already here"
fi
base_id=$(docker image inspect --format '{{.Id}}' hellohal2064/vllm-qwen3.5-gb10:latest)
echo "image-id=$base_id"
