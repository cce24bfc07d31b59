#!/usr/bin/env bash
# Preflight, before any unit is stopped: the fabric link of this node is usable — the netdev
# exists and is up with its address and MTU (the peers' too), the RDMA ports are ACTIVE, and
# peers answer, with frames of the full MTU. A PCIe twin of the port missing from the HCAs is a
# warning: NCCL works with one, at half the bandwidth.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'preflight fabric' "$*" >&2; bws_said+=("$*"); }
bws_cleanup=""
trap() {
  if [ "$#" -eq 2 ] && [ "$2" = EXIT ]; then
    bws_cleanup=$1
    builtin trap bws_exit EXIT
  else
    # shellcheck disable=SC2064 # the caller's words, as the caller quoted them
    builtin trap "$@"
  fi
}
bws_failed_command=""
set -o errtrace
trap 'bws_failed_command=$BASH_COMMAND' ERR
# In a step, its timeout's TERM ends the script through the block (outside one, as before).
[ -z "${BWS_DOING:-}" ] || trap 'exit 143' TERM
trap : EXIT
# The log file is appended to by every run: this run's lines are those after its present size.
bws_log_from=1
if [ -n "${progress_log:-}" ] && [ -f "$progress_log" ]; then
  bws_log_from=$(($(stat -c %s "$progress_log") + 1))
fi
bws_log_tail() {
  [ -z "${progress_log:-}" ] || tail -c "+$bws_log_from" "$progress_log" 2>/dev/null | tail -c 8000 | tr '\r' '\n' |
    grep -v '^[[:space:]]*$' || true
}
bws_missing() {
  # The command a status 127 did not find: named by bash in the log, or the failed command's first word.
  local c
  for c in $(bws_log_tail | sed -n 's/^.*: \([^ :]*\): command not found$/\1/p' | tail -n 3
             printf '%s\n' "${bws_failed_command%% *}"); do
    command -v "$c" >/dev/null 2>&1 || { printf '%s\n' "$c"; return 0; }
  done
}
bws_exit() {
  local rc=$? missing="" package="" meaning=""
  set +e +o errtrace
  builtin trap - ERR
  eval "$bws_cleanup"
  # Once per step: not for a subshell's own exit, nor outside a step.
  [ "$rc" -ne 0 ] && [ -n "${BWS_DOING:-}" ] && [ "$BASHPID" = "$$" ] || return 0
  case $rc in
    127) missing=$(bws_missing); meaning="a command was not found${missing:+: $missing}" ;;
    126) meaning="a command could not be run (not executable)" ;;
    143) meaning="ended by SIGTERM: the step's timeout, or the run was stopped" ;;
    *) meaning="${bws_failed_command:+the command that failed: ${bws_failed_command:0:160}}" ;;
  esac
  # The Debian package of each command this script names (templates/node-packages.txt; render.py).
  case $missing in
    awk) package=mawk ;;
    ssh) package=openssh-client ;;
    ip|rdma) package=iproute2 ;;
    ping) package=iputils-ping ;;
    apt-get) package=apt ;;
    *) ;;
  esac
  printf '\n%s\n' "FAILED: $BWS_DOING"
  printf '  node:   %s\n' "${BWS_NODE:-?}"
  printf '  status: exit %s%s\n' "$rc" "${meaning:+ ($meaning)}"
  # Its last words: the script's own reason, often with its fix (not where the log file is).
  local last=() line n=0
  for line in "${bws_said[@]}"; do
    case $line in "full output in "*) ;; *) last[n++]=$line ;; esac
  done
  for line in "${last[@]:$((n > 2 ? n - 2 : 0))}"; do
    printf '  said:   %s\n' "${line:0:400}"
  done
  local tail_lines
  tail_lines=$(bws_log_tail | tail -n 12 | cut -c1-300)
  if [ -n "$tail_lines" ]; then
    printf '  log:    last lines of %s\n' "$progress_log"
    printf '%s\n' "$tail_lines" | sed 's/^/    | /'
  fi
  if [ -n "$package" ]; then
    printf '  fix:    install the Debian package %s on %s (apt-get install %s); then run pulumi up again\n' "$package" "${BWS_NODE:-the node}" "$package"
  elif [ -n "$missing" ]; then
    printf '  fix:    install %s on %s (it is not on PATH there); then run pulumi up again\n' "$missing" \
      "${BWS_NODE:-the node}"
  fi
}
sysfs=/sys
dev=enp1s0f1np1
address=192.168.200.12
fail() { log "$* on node spark-1a32; nothing was stopped"; exit 1; }
fabric_link() {
  local sys="${sysfs:-/sys}/class/net/$1" state=up addrs
  if [ ! -d "$sys" ]; then printf 'link\t%s\tabsent\t\t\t\n' "$1"; return; fi
  if [ $(( $(cat "$sys/flags") & 1 )) -ne 1 ]; then state=admin-down
  elif [ "$(cat "$sys/carrier" 2>/dev/null)" != 1 ]; then state=no-carrier
  fi
  addrs=$(ip -o addr show dev "$1" 2>/dev/null | awk '{split($4, a, "/"); printf "%s%s", sep, a[1]; sep=","}') || true
  printf 'link\t%s\t%s\t%s\t%s\t%s\n' "$1" "$state" "$(cat "$sys/operstate")" "$(cat "$sys/mtu")" "$addrs"
}
link=$(fabric_link "$dev")
case "$(cut -f3 <<<"$link")" in
  up) ;;
  absent) fail "fabric netdev $dev does not exist" ;;
  admin-down) fail "fabric netdev $dev is administratively down" ;;
  *) fail "fabric netdev $dev is down (no carrier; $(cut -f4 <<<"$link"))" ;;
esac
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
# The MTU of spark-5be3's fabric netdev, read over the fabric (the messages name both sides).
peer_mtu_1() (
  peer_known_hosts=$(mktemp)
  trap 'rm -f "$peer_known_hosts"' EXIT
  printf '%s %s\n' 192.168.200.13 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ3rWm2yq0G7w8s0c6XbQf7l0p2F7m9m4TtQ8VbAzg2B' > "$peer_known_hosts"
  peer_ssh=(ssh -F /dev/null -i /root/.ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes
            -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$peer_known_hosts"
            -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 -o ServerAliveInterval=15
            -o ServerAliveCountMax=4 -o Compression=no -o LogLevel=ERROR)
  peer() { "${peer_ssh[@]}" root@192.168.200.13 "$@"; }
  mtu=$(peer cat /sys/class/net/enp1s0f1np1/mtu 2>/dev/null) && [ -n "$mtu" ] \
    || mtu="an MTU not read (no SSH over the fabric)"
  echo 'spark-5be3'"'"'s enp1s0f1np1'" has $mtu"
)
mtu=$(cat "$sysfs/class/net/$dev/mtu")
want_mtu=9000
if [ "$mtu" != "$want_mtu" ]; then
  theirs=""
  theirs+="; $(peer_mtu_1)"
  fail "fabric netdev $dev has MTU $mtu, but fabric.mtu is $want_mtu${theirs}; a frame larger than the" \
       "smaller MTU is dropped, and the ranks hang or crawl; fix: ip link set dev $dev mtu $want_mtu here" \
       "(and in the node's network configuration, to last), or set fabric.mtu to the MTU every node and" \
       "the switch have"
fi
port_state=$(cat "$sysfs"/class/infiniband/rocep1s0f1/ports/1/state 2>/dev/null || echo "missing")
case "$port_state" in *ACTIVE*) ;; *) fail "RDMA port rocep1s0f1 is $port_state";; esac
port_state=$(cat "$sysfs"/class/infiniband/roceP2p1s0f1/ports/1/state 2>/dev/null || echo "missing")
case "$port_state" in *ACTIVE*) ;; *) fail "RDMA port roceP2p1s0f1 is $port_state";; esac
# Every RDMA device of the port: the netdev's own and its PCIe twins, the devices of the same
# adapter (sys_image_guid) at the same bus, slot and function in another PCIe domain (a DGX
# Spark's port is two PCIe x4 functions: rocep1s0f1 in 0000, roceP2p1s0f1 in 0002).
listed=' rocep1s0f1 roceP2p1s0f1 '
hcas_key=fabric.hcas
for own in "$sysfs/class/net/$dev/device/infiniband/"*; do
  [ -e "$own" ] || continue
  guid=$(cat "$sysfs/class/infiniband/${own##*/}/sys_image_guid" 2>/dev/null) || continue
  slot=$(basename "$(readlink -f "$sysfs/class/infiniband/${own##*/}/device")")
  for rdma in "$sysfs/class/infiniband/"*; do
    [ "$(cat "$rdma/sys_image_guid" 2>/dev/null)" = "$guid" ] || continue
    at=$(basename "$(readlink -f "$rdma/device")")
    [ "${at#*:}" = "${slot#*:}" ] || continue
    case "$listed" in
      *" ${rdma##*/} "*) ;;
      *) log "WARNING: RDMA device ${rdma##*/} ($at) is part of the port of $dev (with ${own##*/}, $slot) but" \
             "not in $hcas_key on node spark-1a32: NCCL uses only the devices listed, about half" \
             "the port's bandwidth with one of two; fix: add ${rdma##*/} to $hcas_key";;
    esac
  done
done
ping -c 2 -W 2 -I "$dev" 192.168.200.13 >/dev/null 2>&1 || fail "peer 192.168.200.13 does not answer on the fabric"
# Frames of the full MTU, not fragmented: a peer or a switch port with a smaller MTU drops them.
ping -c 1 -W 2 -M 'do' -s "$((mtu - 28))" -I "$dev" 192.168.200.13 >/dev/null 2>&1 \
  || fail "frames of $mtu bytes (fabric.mtu) do not reach spark-5be3 (192.168.200.13) whole" \
          "(ping -M do -s $((mtu - 28))) though smaller ones do; $dev here has $mtu, $(peer_mtu_1);" \
          "fix: the same MTU on every node's fabric netdev and on the switch ports between them"
log "link $dev up, $address, MTU $mtu, RDMA ports active, peers answer with $mtu-byte frames"
