#!/usr/bin/env bash
# Build the derived engine image on its build node (or only pull the base when nothing is added). The tag is the content address of the
# Dockerfile, so an existing tag means the work is done. The image is built under a staging tag
# and tagged for real only after it passed its check: nothing half-built carries the real tag.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'image blackwell-serving/sglang-cu13:6652dad398a1' "$*" >&2; }
if id=$(docker image inspect --format '{{.Id}}' blackwell-serving/sglang-cu13:6652dad398a1 2>/dev/null); then
  log "already built"
  echo "image-id=$id"
  exit 0
fi
if ! docker image inspect lmsysorg/sglang:dev-cu13 >/dev/null 2>&1; then
  log "pulling base image"
  docker pull lmsysorg/sglang:dev-cu13 >&2
fi
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cat > "$ctx/Dockerfile" <<'BWS_DOCKERFILE_EOF'
# Derived engine image: the base engine plus a transformers upgrade layer and pinned pip packages.
# Rendered by blackwell-serving; its content address is the image tag.
FROM lmsysorg/sglang:dev-cu13
RUN python3 -m pip install --no-cache-dir --upgrade 'transformers>=5.2' \
 && python3 -c "import transformers; print('transformers', transformers.__version__)"
LABEL org.blackwell-serving.base=lmsysorg/sglang:dev-cu13
BWS_DOCKERFILE_EOF
log "building (progress below)"
docker build --network host -t blackwell-serving/sglang-cu13:6652dad398a1-staging "$ctx" >&2
docker tag blackwell-serving/sglang-cu13:6652dad398a1-staging blackwell-serving/sglang-cu13:6652dad398a1
docker rmi blackwell-serving/sglang-cu13:6652dad398a1-staging >/dev/null
echo "image-id=$(docker image inspect --format '{{.Id}}' blackwell-serving/sglang-cu13:6652dad398a1)"
