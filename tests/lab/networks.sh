#!/usr/bin/env bash
# Create (up) or remove (down) the lab's two Docker bridges: management and fabric.
. "$(dirname "$0")/lib.sh"

ensure_net() {  # ensure_net <name> <subnet> <gateway>
  local name=$1 subnet=$2 gw=$3 have
  if have=$(docker network inspect -f '{{range .IPAM.Config}}{{.Subnet}} {{.Gateway}}{{end}}' "$name" 2>/dev/null); then
    [[ $have == "$subnet $gw" ]] && { log "network: $name $subnet present"; return; }
    log "network: $name has '$have', want '$subnet $gw': recreating"
    docker network rm "$name" >/dev/null || die "cannot remove $name (nodes still attached? run: lab down)"
  fi
  log "network: creating $name $subnet (gateway $gw)"
  docker network create --driver bridge --subnet "$subnet" --gateway "$gw" \
    --opt "com.docker.network.bridge.name=$name" --label bws.lab=1 "$name" >/dev/null
}

case ${1:-up} in
  up)
    ensure_net "$LAB_MGMT_NET" "$LAB_MGMT_SUBNET" "$LAB_MGMT_GATEWAY"
    ensure_net "$LAB_FABRIC_NET" "$LAB_FABRIC_SUBNET" "$LAB_FABRIC_GATEWAY" ;;
  down)
    for n in "$LAB_MGMT_NET" "$LAB_FABRIC_NET"; do
      if docker network inspect "$n" >/dev/null 2>&1; then
        log "network: removing $n"; docker network rm "$n" >/dev/null
      fi
    done ;;
  *) die "usage: networks.sh up|down" ;;
esac
