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
fabric_link() {
  local sys="${sysfs:-/sys}/class/net/$1" state=up addrs
  if [ ! -d "$sys" ]; then printf 'link\t%s\tabsent\t\t\t\n' "$1"; return; fi
  if [ $(( $(cat "$sys/flags") & 1 )) -ne 1 ]; then state=admin-down
  elif [ "$(cat "$sys/carrier" 2>/dev/null)" != 1 ]; then state=no-carrier
  fi
  addrs=$(ip -o addr show dev "$1" 2>/dev/null | awk '{split($4, a, "/"); printf "%s%s", sep, a[1]; sep=","}') || true
  printf 'link\t%s\t%s\t%s\t%s\t%s\n' "$1" "$state" "$(cat "$sys/operstate")" "$(cat "$sys/mtu")" "$addrs"
}
endpoint() {
  printf 'url\t%s\t%s\n' "$1" "$(curl -s -o /dev/null -m 3 -w '%{http_code}' "$1" 2>/dev/null || true)"
}
env_file() {
  local token=absent
  if [ -f "$1" ] && [ -s "$1.generation" ]; then token=$(head -c 64 "$1.generation" | tr -dc 'a-f0-9-'); fi
  printf 'envfile\t%s\t%s\n' "$1" "${token:-absent}"
}
unit_state bws-gateway.service
unit_state bws-node-exporter.service
unit_state bws-prometheus.service
unit_state bws-tiny-b-ray-worker.service
unit_state bws-tiny-gguf-watchdog.timer
unit_state bws-tiny-gguf.service
unit_state bws-tiny-watchdog.timer
unit_state bws-tiny.service
unit_state glm.service
image_state 198.18.0.1:5000/lab/llama-cpp:0c1e570
image_state blackwell-serving/gateway-lab:e2c1def74264
image_state blackwell-serving/vllm-lab:2b5ceeb6797a
model_cache /var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1
model_cache /var/lib/blackwell-serving/models/blackwell-lab--tiny-llama-gguf--lab-v1
fabric_link eth1
endpoint http://127.0.0.1:4000/health/liveliness
endpoint http://127.0.0.1:8000/health
endpoint http://127.0.0.1:8003/health
endpoint http://127.0.0.1:9090/-/ready
env_file /etc/blackwell-serving/gateway.env
env_file /etc/blackwell-serving/tiny-gguf.env
env_file /etc/blackwell-serving/tiny.env
exit 0
