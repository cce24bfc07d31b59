#!/usr/bin/env bash
# Create (up) or remove (down) the lab's two Docker bridges: management and fabric.
# The fabric is --internal, like a cable between two machines: no way out, no default route
# (so a node's default route stays on mgmt), and a jumbo MTU as on the real RoCE links.
. "$(dirname "$0")/lib.sh"

ensure_net() {  # ensure_net <name> <subnet> <gateway> <internal:true|false> [mtu]
  local name=$1 subnet=$2 gw=$3 internal=$4 mtu=${5:-} have h_sub h_gw h_int h_mtu opts=()
  if have=$(docker network inspect -f '{{range .IPAM.Config}}{{.Subnet}} {{.Gateway}}{{end}} {{.Internal}} {{index .Options "com.docker.network.driver.mtu"}}' "$name" 2>/dev/null); then
    read -r h_sub h_gw h_int h_mtu <<<"$have"
    if [[ $h_sub == "$subnet" && $h_gw == "$gw" && $h_int == "$internal" && (-z $mtu || $h_mtu == "$mtu") ]]; then
      log "network: $name $subnet present"; return
    fi
    log "network: $name is '$have', want '$subnet $gw internal=$internal mtu=${mtu:-any}': recreating"
    docker network rm "$name" >/dev/null || die "cannot remove $name (nodes still attached? run: lab down)"
  fi
  log "network: creating $name $subnet (gateway $gw, internal $internal, mtu ${mtu:-default})"
  if [[ $internal == true ]]; then opts+=(--internal); fi
  if [[ -n $mtu ]]; then opts+=(--opt "com.docker.network.driver.mtu=$mtu"); fi
  docker network create --driver bridge --subnet "$subnet" --gateway "$gw" "${opts[@]}" \
    --opt "com.docker.network.bridge.name=$name" --label bws.lab=1 "$name" >/dev/null
}

case ${1:-up} in
  up)
    ensure_net "$LAB_MGMT_NET" "$LAB_MGMT_SUBNET" "$LAB_MGMT_GATEWAY" false
    ensure_net "$LAB_FABRIC_NET" "$LAB_FABRIC_SUBNET" "$LAB_FABRIC_GATEWAY" true "$LAB_FABRIC_MTU" ;;
  down)
    for n in "$LAB_MGMT_NET" "$LAB_FABRIC_NET"; do
      if docker network inspect "$n" >/dev/null 2>&1; then
        log "network: removing $n"; docker network rm "$n" >/dev/null
      fi
    done ;;
  *) die "usage: networks.sh up|down" ;;
esac
