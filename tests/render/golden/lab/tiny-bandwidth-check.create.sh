#!/usr/bin/env bash
# Preflight, before any unit is stopped: the all-reduce bandwidth of the fabric between the nodes
# of a deployment, in its engine image (allreduce_bandwidth.py, sent on stdin). Rank 0 runs here,
# every other rank on its node through `peer`; each container is bounded by `timeout` and removed
# on the way out, whatever happens. Prints bus-gbps=<Gbit/s>, the stack output. Below a floor it
# fails: fabric.bandwidth_check.min_bus_gbps, or else a fraction of the slowest link speed the
# nodes report (components/preflight/bandwidth.py: LINE_RATE_FRACTION).
# Arguments of `peer` are quoted twice: once for this shell, once for the peer's.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'preflight bandwidth tiny' "$*" >&2; bws_said+=("$*"); }
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
    docker) package=docker.io ;;
    awk) package=mawk ;;
    python3) package=python3 ;;
    ssh) package=openssh-client ;;
    free) package=procps ;;
    ethtool) package=ethtool ;;
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
nodes='lab-1 and lab-2'
container=bws-tiny-bw-0
# stdin can be read once: every rank, here and on the peers, reads the script from this copy.
script=$(mktemp)
out=$(mktemp)
speeds=$(mktemp)   # NODE NETDEV MB/S per line: each node's fabric link speed, -1 when it reports none
ranks=()
# A peer's subshell removes its container when it is stopped (its own trap, below).
stop_all() {
  docker rm -f "$container" >/dev/null 2>&1 || true
  kill "${ranks[@]}" 2>/dev/null || true
  wait || true
  rm -f "$script" "$out" "$speeds"
}
trap stop_all EXIT
cat > "$script"
docker rm -f "$container" >/dev/null 2>&1 || true
# A link that does not know its speed (virtual) fails to read, or reads -1.
echo lab-1 eth1 "$(cat /sys/class/net/eth1/speed 2>/dev/null || echo -1)" >> "$speeds"
# Rank 1 on lab-2, in a subshell of its own: its `peer`, its trap.
(
  peer_known_hosts=$(mktemp)
  trap 'rm -f "$peer_known_hosts"' EXIT
  printf '%s %s\n' 198.19.0.12 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPRTDOYX0EbHaFlesNRb4u2zayIVA/2Yw/GedRwZ+NTm' > "$peer_known_hosts"
  peer_ssh=(ssh -F /dev/null -i /root/.ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes
            -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$peer_known_hosts"
            -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 -o ServerAliveInterval=15
            -o ServerAliveCountMax=4 -o Compression=no -o LogLevel=ERROR)
  peer() { "${peer_ssh[@]}" root@198.19.0.12 "$@"; }
  remove() { peer timeout 60 docker rm -f bws-tiny-bw-1 >/dev/null 2>&1 || true; }
  # Stopped: the container goes, then the ssh that ran it (it holds this script's output open).
  # A container that only starts after this (rank 0 failed at once) ends by its own timeout,
  # and the next run removes it first.
  rank_ssh=""
  trap 'remove; [ -z "$rank_ssh" ] || kill "$rank_ssh" 2>/dev/null || true; rm -f "$peer_known_hosts"' EXIT
  trap 'exit 143' TERM
  echo lab-2 eth1 \
    "$(peer cat /sys/class/net/eth1/speed 2>/dev/null || echo -1)" >> "$speeds"
  remove
  # In the background, so that a TERM is handled at once rather than when ssh returns.
  peer timeout -k 10 305 \
      env NCCL_SOCKET_IFNAME=eth1 GLOO_SOCKET_IFNAME=eth1 TP_SOCKET_IFNAME=eth1 UCX_NET_DEVICES=eth1 NCCL_IB_GID_INDEX=3 NCCL_IB_DISABLE=1 VLLM_HOST_IP=198.19.0.12 SGLANG_HOST_IP=198.19.0.12 RAY_NODE_IP_ADDRESS=198.19.0.12 VLLM_CPU_KVCACHE_SPACE=1 OMP_NUM_THREADS=1 VLLM_CPU_OMP_THREADS_BIND=nobind MASTER_ADDR=198.19.0.11 MASTER_PORT=29555 WORLD_SIZE=2 RANK=1 \
      docker run -i --rm --name bws-tiny-bw-1 --network host --init --shm-size 2g -e NCCL_SOCKET_IFNAME -e GLOO_SOCKET_IFNAME -e TP_SOCKET_IFNAME -e UCX_NET_DEVICES -e NCCL_IB_GID_INDEX -e NCCL_IB_DISABLE -e VLLM_HOST_IP -e SGLANG_HOST_IP -e RAY_NODE_IP_ADDRESS -e VLLM_CPU_KVCACHE_SPACE -e OMP_NUM_THREADS -e VLLM_CPU_OMP_THREADS_BIND -e MASTER_ADDR -e MASTER_PORT -e WORLD_SIZE -e RANK \
      --entrypoint python3 blackwell-serving/vllm-lab:2b5ceeb6797a - gloo 64 3 305 < "$script" >&2 &
  rank_ssh=$!
  wait "$rank_ssh"
) &
ranks+=("$!")
log "all-reduce between $nodes:" 64 "MiB," 3 "times, over" gloo
rc=0
timeout -k 10 305 \
  env NCCL_SOCKET_IFNAME=eth1 GLOO_SOCKET_IFNAME=eth1 TP_SOCKET_IFNAME=eth1 UCX_NET_DEVICES=eth1 NCCL_IB_GID_INDEX=3 NCCL_IB_DISABLE=1 VLLM_HOST_IP=198.19.0.11 SGLANG_HOST_IP=198.19.0.11 RAY_NODE_IP_ADDRESS=198.19.0.11 VLLM_CPU_KVCACHE_SPACE=1 OMP_NUM_THREADS=1 VLLM_CPU_OMP_THREADS_BIND=nobind MASTER_ADDR=198.19.0.11 MASTER_PORT=29555 WORLD_SIZE=2 RANK=0 \
  docker run -i --rm --name bws-tiny-bw-0 --network host --init --shm-size 2g -e NCCL_SOCKET_IFNAME -e GLOO_SOCKET_IFNAME -e TP_SOCKET_IFNAME -e UCX_NET_DEVICES -e NCCL_IB_GID_INDEX -e NCCL_IB_DISABLE -e VLLM_HOST_IP -e SGLANG_HOST_IP -e RAY_NODE_IP_ADDRESS -e VLLM_CPU_KVCACHE_SPACE -e OMP_NUM_THREADS -e VLLM_CPU_OMP_THREADS_BIND -e MASTER_ADDR -e MASTER_PORT -e WORLD_SIZE -e RANK \
  --entrypoint python3 blackwell-serving/vllm-lab:2b5ceeb6797a - gloo 64 3 305 < "$script" > "$out" || rc=$?
if [ "$rc" -ne 0 ]; then
  stage=$(sed -n 's/^stage=//p' "$out" | tail -n 1)
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    # Stopped by its time bound: a hang, most often NCCL's set-up on the wrong interface or device.
    log "the" gloo "all-reduce between $nodes did not finish in" 305 "s" \
        "(fabric.bandwidth_check.timeout_s; it hung in: ${stage:-start-up, before the rendezvous});" \
        'fix: check on each node (lab-1: GLOO_SOCKET_IFNAME=eth1; lab-2: GLOO_SOCKET_IFNAME=eth1) that GLOO_SOCKET_IFNAME (fabric.netdev) is up with the node'"'"'s fabric_address and that the nodes reach each other on it; a node whose netdev differs sets its own in nodes[].fabric.netdev'"; nothing was stopped"
    exit 1
  fi
  log "the all-reduce between $nodes failed (exit $rc, above; at: ${stage:-start-up}); check that the nodes" \
      "reach each other on the fabric and that port" 29555 "is free on" lab-1"; nothing was stopped"
  exit 1
fi
for rank in "${ranks[@]}"; do
  wait "$rank" || rc=$?
done
ranks=()
if [ "$rc" -ne 0 ]; then
  log "a rank on a peer failed (exit $rc, above); nothing was stopped"
  exit 1
fi
gbps=$(sed -n 's/^bus-gbps=//p' "$out" | tail -n 1)
if [ -z "$gbps" ]; then
  log "rank 0 reported no bus bandwidth (above); nothing was stopped"
  exit 1
fi
# No floor in the stack: a fraction of the slowest link speed the nodes report (Mb/s).
want=""
unknown=$(awk '$3 + 0 <= 0 { printf "%s%s (/sys/class/net/%s/speed)", (n++ ? ", " : ""), $1, $2 }' "$speeds")
if [ -n "$unknown" ]; then
  log "no floor derived: the fabric link of $unknown reports no speed (-1 or unreadable: a virtual" \
      "link); set fabric.bandwidth_check.min_bus_gbps for one"
else
  fraction=0.01
  read -r slowest slowest_dev mbps < <(sort -k3,3n "$speeds" | head -n 1)
  want=$(awk -v m="$mbps" -v f="$fraction" 'BEGIN { printf "%.3g", m * f / 1000 }')
  basis="derived: $fraction of the $mbps Mb/s link speed of $slowest (/sys/class/net/$slowest_dev/speed), the"
  basis+=" slowest node's, as fabric.bandwidth_check.min_bus_gbps is not set"
fi
if [ -n "$want" ] && awk -v got="$gbps" -v want="$want" 'BEGIN { exit !(got + 0 < want + 0) }'; then
  log "the bus bandwidth between $nodes is $gbps Gbit/s, below the expected $want Gbit/s ($basis);" \
      "likely cause:" 'gloo moves its data over TCP: the link is slower than it reports (a shaper: tc qdisc show dev eth1; a shared or congested path; an MTU mismatch on the way) or the traffic takes another network than GLOO_SOCKET_IFNAME=eth1'"; fix:" 'check the link speed (ethtool eth1), tc qdisc show dev eth1 and the MTU on both nodes and the switch'"; or set fabric.bandwidth_check.min_bus_gbps" \
      "to the floor this fabric should meet; nothing was stopped"
  exit 1
fi
log "bus bandwidth $gbps Gbit/s between $nodes${want:+ (floor $want Gbit/s: $basis)}"
echo "bus-gbps=$gbps"
