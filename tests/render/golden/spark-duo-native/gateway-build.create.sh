#!/usr/bin/env bash
# Build the derived engine image on its build node (or only pull the base when nothing is
# added). The tag is the content address of the Dockerfile, and the image records the ID of the
# base it was built on: an existing tag over the same base means the work is done; a base that
# moved (a mutable tag re-pushed) means a rebuild. The image is built under a staging tag and
# tagged for real only once built: nothing half-built carries the real tag.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'image blackwell-serving/gateway:c2860cdd73d4' "$*" >&2; }
progress_log=/var/log/blackwell-serving/image-blackwell-serving-gateway-c2860cdd73d4.log
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
if ! docker pull python:3.12-slim 2>&1 | progress; then
  docker image inspect python:3.12-slim >/dev/null 2>&1 || { log "cannot pull the base image"; exit 1; }
  log "registry unreachable; using the base image already here"
fi
base_id=$(docker image inspect --format '{{.Id}}' python:3.12-slim)
if built_on=$(docker image inspect --format '{{ index .Config.Labels "org.blackwell-serving.base-id" }}' blackwell-serving/gateway:c2860cdd73d4 2>/dev/null) \
   && [ "$built_on" = "$base_id" ]; then
  log "already built on this base"
  echo "image-id=$(docker image inspect --format '{{.Id}}' blackwell-serving/gateway:c2860cdd73d4)"
  exit 0
fi
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cat > "$ctx/Dockerfile" <<'BWS_DOCKERFILE_EOF'
# Derived engine image: the base engine plus a transformers upgrade layer and pinned pip packages.
# Rendered by blackwell-serving; its content address is the image tag.
FROM python:3.12-slim
RUN python3 -m pip install --no-cache-dir --upgrade 'litellm[proxy]==1.106.12' prisma==0.15.0 \
 && python3 -c "import transformers; print('transformers', transformers.__version__)"
LABEL org.blackwell-serving.base=python:3.12-slim
BWS_DOCKERFILE_EOF
log "building on base $base_id"
previous=$(docker image inspect --format '{{.Id}}' blackwell-serving/gateway:c2860cdd73d4 2>/dev/null || true)
docker build --network host --label "org.blackwell-serving.base-id=$base_id" \
  -t blackwell-serving/gateway:c2860cdd73d4-staging "$ctx" 2>&1 | progress
docker tag blackwell-serving/gateway:c2860cdd73d4-staging blackwell-serving/gateway:c2860cdd73d4
docker rmi blackwell-serving/gateway:c2860cdd73d4-staging >/dev/null
# The image this tag named before (an older base): gone unless something still uses it.
[ -z "$previous" ] || docker image rm "$previous" >/dev/null 2>&1 || true
echo "image-id=$(docker image inspect --format '{{.Id}}' blackwell-serving/gateway:c2860cdd73d4)"
