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
log() { printf '[blackwell %s] %s\n' 'preflight bandwidth qwen35' "$*" >&2; bws_said+=("$*"); }
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
    ip) package=iproute2 ;;
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
nodes='spark-1a32 and spark-5be3'
container=bws-qwen35-bw-0
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
echo spark-1a32 enp1s0f1np1 "$(cat /sys/class/net/enp1s0f1np1/speed 2>/dev/null || echo -1)" >> "$speeds"
# Rank 1 on spark-5be3, in a subshell of its own: its `peer`, its trap.
(
  peer_known_hosts=$(mktemp)
  trap 'rm -f "$peer_known_hosts"' EXIT
  printf '%s %s\n' 192.168.200.13 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ3rWm2yq0G7w8s0c6XbQf7l0p2F7m9m4TtQ8VbAzg2B' > "$peer_known_hosts"
  peer_ssh=(ssh -F /dev/null -i /root/.ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes
            -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$peer_known_hosts"
            -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 -o ServerAliveInterval=15
            -o ServerAliveCountMax=4 -o Compression=no -o LogLevel=ERROR)
  peer() { "${peer_ssh[@]}" root@192.168.200.13 "$@"; }
  remove() { peer timeout 60 docker rm -f bws-qwen35-bw-1 >/dev/null 2>&1 || true; }
  # Stopped: the container goes, then the ssh that ran it (it holds this script's output open).
  # A container that only starts after this (rank 0 failed at once) ends by its own timeout,
  # and the next run removes it first.
  rank_ssh=""
  trap 'remove; [ -z "$rank_ssh" ] || kill "$rank_ssh" 2>/dev/null || true; rm -f "$peer_known_hosts"' EXIT
  trap 'exit 143' TERM
  echo spark-5be3 enp1s0f1np1 \
    "$(peer cat /sys/class/net/enp1s0f1np1/speed 2>/dev/null || echo -1)" >> "$speeds"
  remove
  # In the background, so that a TERM is handled at once rather than when ssh returns.
  peer timeout -k 10 404 \
      env NCCL_SOCKET_IFNAME=enp1s0f1np1 GLOO_SOCKET_IFNAME=enp1s0f1np1 TP_SOCKET_IFNAME=enp1s0f1np1 UCX_NET_DEVICES=enp1s0f1np1 NCCL_IB_GID_INDEX=3 NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 VLLM_HOST_IP=192.168.200.13 SGLANG_HOST_IP=192.168.200.13 RAY_NODE_IP_ADDRESS=192.168.200.13 VLLM_ATTENTION_BACKEND=FLASHINFER MASTER_ADDR=192.168.200.12 MASTER_PORT=29555 WORLD_SIZE=2 RANK=1 \
      docker run -i --rm --name bws-qwen35-bw-1 --network host --ipc host --gpus all --init --shm-size 32g --ulimit memlock=-1:-1 --device /dev/infiniband --cap-add IPC_LOCK -e NCCL_SOCKET_IFNAME -e GLOO_SOCKET_IFNAME -e TP_SOCKET_IFNAME -e UCX_NET_DEVICES -e NCCL_IB_GID_INDEX -e NCCL_IB_HCA -e VLLM_HOST_IP -e SGLANG_HOST_IP -e RAY_NODE_IP_ADDRESS -e VLLM_ATTENTION_BACKEND -e MASTER_ADDR -e MASTER_PORT -e WORLD_SIZE -e RANK \
      --entrypoint python3 hellohal2064/vllm-qwen3.5-gb10:latest - nccl 1024 5 404 < "$script" >&2 &
  rank_ssh=$!
  wait "$rank_ssh"
) &
ranks+=("$!")
log "all-reduce between $nodes:" 1024 "MiB," 5 "times, over" nccl
rc=0
timeout -k 10 404 \
  env NCCL_SOCKET_IFNAME=enp1s0f1np1 GLOO_SOCKET_IFNAME=enp1s0f1np1 TP_SOCKET_IFNAME=enp1s0f1np1 UCX_NET_DEVICES=enp1s0f1np1 NCCL_IB_GID_INDEX=3 NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 VLLM_HOST_IP=192.168.200.12 SGLANG_HOST_IP=192.168.200.12 RAY_NODE_IP_ADDRESS=192.168.200.12 VLLM_ATTENTION_BACKEND=FLASHINFER MASTER_ADDR=192.168.200.12 MASTER_PORT=29555 WORLD_SIZE=2 RANK=0 \
  docker run -i --rm --name bws-qwen35-bw-0 --network host --ipc host --gpus all --init --shm-size 32g --ulimit memlock=-1:-1 --device /dev/infiniband --cap-add IPC_LOCK -e NCCL_SOCKET_IFNAME -e GLOO_SOCKET_IFNAME -e TP_SOCKET_IFNAME -e UCX_NET_DEVICES -e NCCL_IB_GID_INDEX -e NCCL_IB_HCA -e VLLM_HOST_IP -e SGLANG_HOST_IP -e RAY_NODE_IP_ADDRESS -e VLLM_ATTENTION_BACKEND -e MASTER_ADDR -e MASTER_PORT -e WORLD_SIZE -e RANK \
  --entrypoint python3 hellohal2064/vllm-qwen3.5-gb10:latest - nccl 1024 5 404 < "$script" > "$out" || rc=$?
if [ "$rc" -ne 0 ]; then
  stage=$(sed -n 's/^stage=//p' "$out" | tail -n 1)
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    # Stopped by its time bound: a hang, most often NCCL's set-up on the wrong interface or device.
    log "the" nccl "all-reduce between $nodes did not finish in" 404 "s" \
        "(fabric.bandwidth_check.timeout_s; it hung in: ${stage:-start-up, before the rendezvous});" \
        'fix: check on each node (spark-1a32: NCCL_SOCKET_IFNAME=enp1s0f1np1 NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 NCCL_IB_GID_INDEX=3; spark-5be3: NCCL_SOCKET_IFNAME=enp1s0f1np1 NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 NCCL_IB_GID_INDEX=3) that NCCL_SOCKET_IFNAME (fabric.netdev) is the cabled ConnectX-7 port, up, with the fabric_address of the node (ip -br addr), NCCL_IB_HCA (fabric.hcas) names the RDMA devices of that port and both are ACTIVE (ibdev2netdev, ibstat), and NCCL_IB_GID_INDEX (fabric.gid_index) is its RoCEv2 GID (show_gids); a node whose names differ (re-cabled) sets its own in nodes[].fabric; add NCCL_DEBUG: INFO to deployments[0].env to see what NCCL chose, or try fabric.disable_ib: true to test over TCP sockets'"; nothing was stopped"
    exit 1
  fi
  log "the all-reduce between $nodes failed (exit $rc, above; at: ${stage:-start-up}); check that the nodes" \
      "reach each other on the fabric and that port" 29555 "is free on" spark-1a32"; nothing was stopped"
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
  fraction=0.6
  read -r slowest slowest_dev mbps < <(sort -k3,3n "$speeds" | head -n 1)
  want=$(awk -v m="$mbps" -v f="$fraction" 'BEGIN { printf "%.3g", m * f / 1000 }')
  basis="derived: $fraction of the $mbps Mb/s link speed of $slowest (/sys/class/net/$slowest_dev/speed), the"
  basis+=" slowest node's, as fabric.bandwidth_check.min_bus_gbps is not set"
fi
if [ -n "$want" ] && awk -v got="$gbps" -v want="$want" 'BEGIN { exit !(got + 0 < want + 0) }'; then
  log "the bus bandwidth between $nodes is $gbps Gbit/s, below the expected $want Gbit/s ($basis);" \
      "likely cause:" 'NCCL fell back to TCP sockets (fabric.disable_ib, or NCCL_IB_DISABLE=1 in deployments[0].env; a GID index that is not RoCEv2, fabric.gid_index: show_gids), or it uses one HCA of the port'"'"'s two PCIe twins (fabric.hcas: half the bandwidth), or the link is slower than it reports'"; fix:" 'NCCL_DEBUG: INFO in deployments[0].env shows NET/IB (RDMA) or NET/Socket (TCP) and the devices used; check that NCCL_IB_HCA (fabric.hcas) lists both PCIe twins of the port (ibdev2netdev), the link speed (ethtool enp1s0f1np1) and the MTU on both nodes and the switch'"; or set fabric.bandwidth_check.min_bus_gbps" \
      "to the floor this fabric should meet; nothing was stopped"
  exit 1
fi
log "bus bandwidth $gbps Gbit/s between $nodes${want:+ (floor $want Gbit/s: $basis)}"
echo "bus-gbps=$gbps"
