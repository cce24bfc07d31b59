#!/usr/bin/env bash
# Preflight, before any unit is stopped: the fabric link of this node is usable — the netdev
# exists and is up with its address and MTU, the RDMA ports are ACTIVE, and peers answer.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'preflight fabric' "$*" >&2; }
dev=eth1
address=198.19.0.12
fail() { log "$* on node lab-2; nothing was stopped"; exit 1; }
[ -d "/sys/class/net/$dev" ] || fail "fabric netdev $dev does not exist"
state=$(cat "/sys/class/net/$dev/operstate")
flags=$(ip -o link show dev "$dev")
case "$flags" in *"state DOWN"*|*",UP"*"NO-CARRIER"*) fail "fabric netdev $dev is down ($state)";; esac
case "$flags" in *"<"*UP*">"*) ;; *) fail "fabric netdev $dev is administratively down";; esac
if ! ip -o -4 addr show dev "$dev" | grep -qF " $address/"; then
  # The ranks and Ray would bind $dev (GLOO/NCCL_SOCKET_IFNAME) and talk over another network.
  holder=$(ip -o -4 addr show | awk -v a="$address/" 'index($4, a) == 1 { print $2; exit }')
  if [ -n "$holder" ]; then
    fail "fabric netdev $dev does not hold $address: $holder does, and GLOO/NCCL/UCX would use $dev" \
         "(not the fabric); fix: set fabric.netdev (or this node's nodes[].fabric.netdev) to $holder"
  fi
  fail "fabric netdev $dev does not hold $address, nor does any interface of this node; fix: give $dev" \
       "that address, or set nodes[].fabric_address to the address $dev has"
fi
mtu=$(cat "/sys/class/net/$dev/mtu")
want_mtu=9000
[ "$mtu" = "$want_mtu" ] || fail "fabric netdev $dev has MTU $mtu, expected $want_mtu"
ping -c 2 -W 2 -I "$dev" 198.19.0.11 >/dev/null 2>&1 || fail "peer 198.19.0.11 does not answer on the fabric"
log "link $dev up, $address, MTU $mtu, peers answer"
