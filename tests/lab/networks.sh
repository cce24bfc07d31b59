#!/usr/bin/env bash
# Create (up) or remove (down) the lab's two Docker bridges: management and fabric; prune: take
# off them every port that is no running container's (see prune_ghosts).
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

# A Docker daemon that died (a machine's session ended, a kill) leaves its containers' network
# namespaces mounted under /run/docker/netns and their veths on the bridges, which outlive it: the
# next daemon takes the same bridges by name. Such a ghost holds a node's address and MAC (Docker
# derives the MAC from the address) without its sshd, so the bridge sends the node's traffic to
# whichever of the two spoke last, and SSH to the node is refused or reset at random moments.
# A port of a lab bridge that is no interface of a running container attached to it is such a
# ghost: its veth is deleted (the namespace loses the address). Prints one line per ghost.
known_ports() {  # known_ports <network>: host-side ifindexes of its running containers' interfaces
  local c pid
  for c in $(docker network inspect -f '{{range .Containers}}{{.Name}} {{end}}' "$1" 2>/dev/null); do
    pid=$(docker inspect -f '{{.State.Pid}}' "$c" 2>/dev/null || echo 0)
    [[ $pid != 0 ]] || continue
    nsenter -t "$pid" -n ip -o link | sed -n 's/^[0-9]*: [^@:]*@if\([0-9]*\):.*/\1/p'
  done
}

prune_ghosts() {
  local net known idx port
  for net in "$LAB_MGMT_NET" "$LAB_FABRIC_NET"; do
    ip link show "$net" >/dev/null 2>&1 || continue
    known=" $(known_ports "$net" | tr '\n' ' ') "
    while read -r idx port; do
      [[ -n $idx && $known != *" $idx "* ]] || continue
      log "network: $net: port $port (ifindex $idx) is no running container's: a dead daemon's ghost; deleting it"
      ip link delete "$port" 2>/dev/null || true
    done < <(ip -o link show master "$net" | sed -n 's/^\([0-9]*\): \([^@:]*\).*/\1 \2/p')
  done
}

case ${1:-up} in
  up)
    ensure_net "$LAB_MGMT_NET" "$LAB_MGMT_SUBNET" "$LAB_MGMT_GATEWAY" false
    ensure_net "$LAB_FABRIC_NET" "$LAB_FABRIC_SUBNET" "$LAB_FABRIC_GATEWAY" true "$LAB_FABRIC_MTU"
    prune_ghosts ;;
  prune)
    prune_ghosts ;;
  down)
    for n in "$LAB_MGMT_NET" "$LAB_FABRIC_NET"; do
      if docker network inspect "$n" >/dev/null 2>&1; then
        log "network: removing $n"; docker network rm "$n" >/dev/null
      fi
    done ;;
  *) die "usage: networks.sh up|prune|down" ;;
esac
