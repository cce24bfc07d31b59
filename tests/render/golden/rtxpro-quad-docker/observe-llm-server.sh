#!/usr/bin/env bash
# Read-only probe of what this stack manages on the node; it changes nothing. One tab-separated
# line per fact, each printed by the fact's own shell (templates/scripts/facts/, parsed by
# components/facts). Every external call is bounded.
set -u
export LC_ALL=C
unit_state() {
  local sha=absent path="/etc/systemd/system/$1"
  [ -f "$path" ] && sha=$(sha256sum < "$path" | cut -d' ' -f1)
  printf 'unit\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$(systemctl show -p LoadState --value "$1" 2>/dev/null)" \
    "$(systemctl is-active "$1" 2>/dev/null)" "$(systemctl is-enabled "$1" 2>/dev/null)" "$sha" \
    "$(systemctl show -p Result --value "$1" 2>/dev/null)" \
    "$(cat /var/lib/blackwell-serving/units/"$1".written 2>/dev/null)" \
    "$([ -e /var/lib/blackwell-serving/units/"$1".put-back ] && echo put-back)"
}
image_id() {
  timeout 20 docker image inspect --format '{{.Id}}' "$1" 2>/dev/null
}
image_state() {
  local id
  id=$(image_id "$1") || id=""
  printf 'image\t%s\t%s\n' "$1" "${id:-absent}"
}
cache_stat() {
  (cd "$1" && find . -type f ! -name '.blackwell-*' -printf '%s %T@ %P\n' \
     | awk '{ $2 = int($2); print }' | LC_ALL=C sort)
}
cache_intact() {
  [ -f "$1/.blackwell-manifest.sha256" ] && [ -f "$1/.blackwell-manifest.stat" ] \
    && cache_stat "$1" | cmp -s - "$1/.blackwell-manifest.stat"
}
model_cache() {
  local sha=absent
  cache_intact "$1" && sha=$(sha256sum < "$1/.blackwell-manifest.sha256" | cut -d' ' -f1)
  printf 'dir\t%s\t%s\n' "$1" "$sha"
}
endpoint() {
  printf 'url\t%s\t%s\n' "$1" "$(curl -s -o /dev/null -m 3 -w '%{http_code}' "$1" 2>/dev/null || true)"
}
env_file() {
  local token=absent
  if [ -f "$1" ] && [ -s "$1.generation" ]; then token=$(head -c 64 "$1.generation" | tr -dc 'a-f0-9-'); fi
  printf 'envfile\t%s\t%s\n' "$1" "${token:-absent}"
}
unit_state bws-qwen35-397b-watchdog.timer
unit_state bws-qwen35-397b.service
unit_state sglang-kimi.service
image_state blackwell-serving/sglang-cu13:6652dad398a1
model_cache /var/lib/blackwell-serving/models/nvidia--Qwen3.5-397B-A17B-NVFP4--0000000000000000000000000000000000000000
endpoint http://127.0.0.1:30000/health
env_file /etc/blackwell-serving/qwen35-397b.env
exit 0
