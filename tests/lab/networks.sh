#!/usr/bin/env bash
# Create (up) or remove (down) the lab's two Docker bridges: management and fabric.
# The fabric is --internal, like a cable between two machines: no way out, no default route
# (so a node's default route stays on mgmt), and a jumbo MTU as on the real RoCE links.
. "$(dirname "$0")/lib.sh"

ensure_net() {  # ensure_net <name> <subnet> <gateway> <internal:true|false> <mtu>
  local name=$1 subnet=$2 gw=$3 internal=$4 mtu=$5 have want opts=()
  want="$subnet $gw $internal $mtu"
  if have=$(docker network inspect -f '{{range .IPAM.Config}}{{.Subnet}} {{.Gateway}}{{end}} {{.Internal}} {{index .Options "com.docker.network.driver.mtu"}}' "$name" 2>/dev/null); then
    [[ $have == "$want" ]] && { log "network: $name $subnet present"; return; }
    log "network: $name is '$have', want '$want': recreating"
    docker network rm "$name" >/dev/null || die "cannot remove $name (nodes still attached? run: lab down)"
  fi
  log "network: creating $name $subnet (gateway $gw, internal $internal, mtu $mtu)"
  if [[ $internal == true ]]; then opts+=(--internal); fi
  docker network create --driver bridge --subnet "$subnet" --gateway "$gw" \
    "${opts[@]}" --opt "com.docker.network.driver.mtu=$mtu" \
    --opt "com.docker.network.bridge.name=$name" --label bws.lab=1 "$name" >/dev/null
}

case ${1:-up} in
  up)
    ensure_net "$LAB_MGMT_NET" "$LAB_MGMT_SUBNET" "$LAB_MGMT_GATEWAY" false 1500
    ensure_net "$LAB_FABRIC_NET" "$LAB_FABRIC_SUBNET" "$LAB_FABRIC_GATEWAY" true "$LAB_FABRIC_MTU" ;;
  down)
    for n in "$LAB_MGMT_NET" "$LAB_FABRIC_NET"; do
      if docker network inspect "$n" >/dev/null 2>&1; then
        log "network: removing $n"; docker network rm "$n" >/dev/null
      fi
    done ;;
  *) die "usage: networks.sh up|down" ;;
esac
