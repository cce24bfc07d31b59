#!/usr/bin/env bash
# Read-only probe of what this stack manages on the node; it changes nothing. One tab-separated
# line per fact (parsed by components/observe/facts.py). Every external call is bounded.
set -u
export LC_ALL=C
unit() {
  local sha=absent path="/etc/systemd/system/$1"
  [ -f "$path" ] && sha=$(sha256sum < "$path" | cut -d' ' -f1)
  printf 'unit\t%s\t%s\t%s\t%s\t%s\n' "$1" "$(systemctl show -p LoadState --value "$1" 2>/dev/null)" \
    "$(systemctl is-active "$1" 2>/dev/null)" "$(systemctl is-enabled "$1" 2>/dev/null)" "$sha"
}

image() {
  local id
  id=$(timeout 20 docker image inspect -f '{{.Id}}' "$1" 2>/dev/null) || id=""
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
dir() {
  local sha=absent
  cache_intact "$1" && sha=$(sha256sum < "$1/.blackwell-manifest.sha256" | cut -d' ' -f1)
  printf 'dir\t%s\t%s\n' "$1" "$sha"
}
link() {
  local sys="/sys/class/net/$1"
  if [ ! -d "$sys" ]; then printf 'link\t%s\tabsent\t0\t\t\n' "$1"; return; fi
  local admin=0 addrs
  [ $(( $(cat "$sys/flags") & 1 )) -eq 1 ] && admin=1
  addrs=$(ip -o addr show dev "$1" 2>/dev/null | awk '{split($4, a, "/"); printf "%s%s", sep, a[1]; sep=","}')
  printf 'link\t%s\t%s\t%s\t%s\t%s\n' "$1" "$(cat "$sys/operstate")" "$admin" "$(cat "$sys/mtu")" "$addrs"
}
url() {
  printf 'url\t%s\t%s\n' "$1" "$(curl -s -o /dev/null -m 3 -w '%{http_code}' "$1" 2>/dev/null || true)"
}
unit bws-gateway.service
unit bws-tiny-b-ray-worker.service
unit bws-tiny-watchdog.timer
unit bws-tiny.service
unit glm.service
image blackwell-serving/gateway-lab:cce61ba6524d
image blackwell-serving/vllm-lab:2b5ceeb6797a
dir /var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1
link eth1
url http://127.0.0.1:4000/health/liveliness
url http://127.0.0.1:8000/health
exit 0
