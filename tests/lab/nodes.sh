#!/usr/bin/env bash
# The lab nodes: containers running systemd as PID 1, sshd and their own dockerd.
#   nodes.sh up N IMAGE   create/start nodes 1..N from IMAGE (recreate those whose image or
#                         per-node files changed; remove nodes above N), then wait for them
#   nodes.sh down         remove every lab node and its /var/lib/docker volume
#   nodes.sh status       one line per node
#   nodes.sh check I...   every node I... answers SSH; one that does not is shown from the host
#                         (diagnose), then brought back (its sshd restarted, or the container
#                         started) with a WARNING; fails when it still does not answer
. "$(dirname "$0")/lib.sh"

# Per-node files, copied into the container before its first start. Prints the tarball path.
stage_node() {
  local i=$1 name stage hk unit
  name=$(node_name "$i")
  hk="$LAB_DIR/hostkeys/$name"
  stage="$STATE/nodes/$name"
  rm -rf "$stage" && mkdir -p "$stage"
  install -D -m 0600 "$hk/ssh_host_ed25519_key" "$stage/etc/ssh/ssh_host_ed25519_key"
  install -D -m 0644 "$hk/ssh_host_ed25519_key.pub" "$stage/etc/ssh/ssh_host_ed25519_key.pub"
  install -D -m 0644 "$STATE/known_hosts" "$stage/etc/ssh/ssh_known_hosts"
  install -D -m 0600 "$STATE/fabric_id_ed25519" "$stage/root/.ssh/id_ed25519"
  install -D -m 0644 "$STATE/fabric_id_ed25519.pub" "$stage/root/.ssh/id_ed25519.pub"
  cat "$STATE/id_ed25519.pub" "$STATE/fabric_id_ed25519.pub" >"$stage/root/.ssh/authorized_keys"
  chmod 0600 "$stage/root/.ssh/authorized_keys"
  # the host's CA bundle: pip and builds inside the node go through this machine's TLS proxy
  install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$stage/etc/ssl/certs/ca-certificates.crt"
  printf '%s' "$name" | md5sum | cut -c1-32 >"$stage/etc/machine-id"
  chmod 0444 "$stage/etc/machine-id"
  # every pair has them: glm at its first place, embeddings at its second (lab.env)
  for unit in "$LAB_GLM_NODE:$LAB_GLM_UNIT" "$LAB_EMBEDDINGS_NODE:$LAB_EMBEDDINGS_UNIT"; do
    [[ ${unit%%:*} == "$(((i - 1) % LAB_PAIR_SIZE + 1))" ]] || continue
    unit=${unit#*:}
    install -D -m 0644 "$LAB_DIR/node/foreign/$unit" "$stage/etc/systemd/system/$unit"
    mkdir -p "$stage/etc/systemd/system/multi-user.target.wants"
    ln -s "/etc/systemd/system/$unit" "$stage/etc/systemd/system/multi-user.target.wants/$unit"
  done
  # files and links only (no directory entries: the image's directory modes stay)
  (cd "$stage" && find . \( -type f -o -type l \) -printf '%P\n' | LC_ALL=C sort |
    tar --owner=0 --group=0 --numeric-owner --mtime=@0 --no-recursion -cf "$stage.tar" -T -)
  echo "$stage.tar"
}

create_node() {  # create_node <i> <image> <tarball> <config-hash>
  local i=$1 image=$2 tarball=$3 config=$4 name vol
  name=$(node_name "$i")
  vol=$(node_volume "$i")
  docker volume create --label bws.lab=1 "$vol" >/dev/null
  docker create --name "$name" --hostname "$name" \
    --cap-add ALL --cap-drop SYS_RESOURCE \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
    --cgroupns host -v /sys/fs/cgroup:/sys/fs/cgroup \
    --tmpfs /run:rw,exec,nosuid,nodev,mode=0755,size=512m --tmpfs /run/lock \
    --mount "type=volume,src=$vol,dst=/var/lib/docker" \
    --env container=docker --stop-signal SIGRTMIN+3 \
    --network "$LAB_MGMT_NET" --ip "$(node_mgmt_ip "$i")" \
    --label bws.lab=1 --label "bws.lab.node=$i" --label "bws.lab.config=$config" \
    "$image" >/dev/null
  docker cp - "$name:/" <"$tarball"
}

# Start a node and only then attach the fabric: Docker gives interfaces to a starting
# container in map order, so a hot-plugged fabric is the way to always get eth0=mgmt, eth1=fabric.
start_node() {
  local i=$1 name
  name=$(node_name "$i")
  if docker inspect -f '{{json .NetworkSettings.Networks}}' "$name" | grep -q "\"$LAB_FABRIC_NET\""; then
    docker network disconnect "$LAB_FABRIC_NET" "$name"
  fi
  docker start "$name" >/dev/null
  docker network connect --ip "$(node_fabric_ip "$i")" "$LAB_FABRIC_NET" "$name"
}

remove_node() {
  local name=$1 vol
  vol=$(docker inspect -f '{{range .Mounts}}{{if eq .Destination "/var/lib/docker"}}{{.Name}}{{end}}{{end}}' "$name" 2>/dev/null || true)
  log "node: removing $name${vol:+ and volume $vol}"
  docker rm -f -v "$name" >/dev/null
  if [[ -n $vol ]]; then docker volume rm "$vol" >/dev/null; fi
}

ensure_node() {  # ensure_node <i> <image>
  local i=$1 image=$2 name tarball config have status img cfg
  name=$(node_name "$i")
  tarball=$(stage_node "$i")
  config=$(sha256sum <"$tarball" | cut -c1-16)
  if have=$(docker inspect -f '{{.State.Status}} {{.Config.Image}} {{index .Config.Labels "bws.lab.config"}}' "$name" 2>/dev/null); then
    read -r status img cfg <<<"$have"
    if [[ $img != "$image" || $cfg != "$config" ]]; then
      log "node: $name is out of date (image $img, files $cfg): recreating"
      docker rm -f "$name" >/dev/null   # its /var/lib/docker volume is kept
      have=
    fi
  fi
  if [[ -z $have ]]; then
    log "node: creating $name ($(node_mgmt_ip "$i"), fabric $(node_fabric_ip "$i")) from $image"
    create_node "$i" "$image" "$tarball" "$config"
    start_node "$i"
  elif [[ $status != running ]]; then
    log "node: starting $name (was $status)"
    start_node "$i"
  else
    log "node: $name running"
  fi
}

wait_node() {  # systemd up, fabric on eth1, sshd answering, nested docker working
  local i=$1 name state="" out deadline=$((SECONDS + 180))
  name=$(node_name "$i")
  until state=$(docker exec "$name" timeout 30 systemctl is-system-running --wait 2>/dev/null) ||
    [[ $state == degraded ]]; do
    ((SECONDS < deadline)) || die "$name: systemd still '$state' after 180 s"
    sleep 1
  done
  if [[ $state != running ]]; then
    log "WARNING: $name: systemd is $state; failed units:"
    docker exec "$name" systemctl --failed --no-legend >&2 || true
  fi
  until out=$(lab_ssh "$i" "ip -o -4 addr show dev $LAB_FABRIC_IFACE; docker info --format '{{.Driver}}'" 2>&1); do
    ((SECONDS < deadline)) || die "$name: ssh/docker not ready: $out"
    sleep 1
  done
  [[ $out == *"$(node_fabric_ip "$i")/"* ]] || die "$name: $LAB_FABRIC_IFACE does not hold $(node_fabric_ip "$i"): $out"
}

ssh_answers() {  # ssh_answers <i>: 3 tries 2 s apart (one refused dial on a busy machine is not a down node)
  local try
  for try in 1 2 3; do
    if lab_ssh "$1" true 2>/dev/null; then return 0; fi
    ((try == 3)) || sleep 2
  done
  return 1
}

# What the host sees of a node that does not answer SSH, without SSH: the container's state and
# its recent life (Docker's events), who listens on port 22 in its network namespace, sshd's unit
# and log, and the kernel's word on killed processes. For whoever reads a failed run's log.
diagnose() {  # diagnose <i>
  local i=$1 name cmd
  name=$(node_name "$i")
  log "node: $name does not answer SSH ($(lab_ssh "$i" true 2>&1 | tail -n 1)); what the host sees:"
  {
    docker inspect -f 'container {{.State.Status}} since {{.State.StartedAt}} (restarts {{.RestartCount}}, OOM-killed {{.State.OOMKilled}}, pid {{.State.Pid}})' "$name" 2>&1 || true
    echo "its events in the last hour:"
    docker events --since 1h --until 0s --filter "container=$name" \
      --format '  {{.Time}} {{.Action}} {{index .Actor.Attributes "exitCode"}}' 2>&1 | tail -n 20 || true
    for cmd in "ss -Hltnp sport = :22" "ip -4 -o addr" "systemctl is-active ssh.service" "pgrep -a sshd" \
      "ls -ld /run/sshd" "journalctl -u ssh.service -n 15 --no-pager -o short-iso" \
      "journalctl -p warning -n 15 --no-pager -o short-iso" "free -m" "df -h / /run"; do
      echo "$ $cmd"
      # shellcheck disable=SC2086  # each line is a command and its words
      timeout 30 docker exec "$name" $cmd 2>&1 | sed 's/^/  /' || true
    done
    echo "the ports of $LAB_MGMT_NET (the node's MAC, $(docker inspect -f "{{(index .NetworkSettings.Networks \"$LAB_MGMT_NET\").MacAddress}}" "$name" 2>/dev/null), is learnt on the port named):"
    ip -o link show master "$LAB_MGMT_NET" 2>&1 | awk '{print "  " $1 " " $2}' || true
    bridge fdb show br "$LAB_MGMT_NET" 2>/dev/null | grep -v permanent | sed 's/^/  /' || true
    echo "the kernel's last words on killed processes and the lab's bridge ports:"
    dmesg 2>/dev/null | grep -iE "out of memory|killed process|oom-kill|segfault|$LAB_MGMT_NET|veth" | tail -n 12 |
      sed 's/^/  /' || true
  } >&2
}

check() {  # check <i>...
  local i name bad=0
  "$LAB_DIR/networks.sh" prune   # a dead daemon's ghost holding a node's address: gone first
  for i in "$@"; do
    ((i >= 1 && i <= LAB_NODES_MAX)) || die "no lab node $i (1..$LAB_NODES_MAX)"
    ssh_answers "$i" && continue
    diagnose "$i"
    name=$(node_name "$i")
    if [[ $(docker inspect -f '{{.State.Status}}' "$name" 2>/dev/null) == running ]]; then
      log "WARNING: $name: restarting its sshd (the node itself is up)"
      docker exec "$name" systemctl reset-failed ssh.service >/dev/null 2>&1 || true
      docker exec "$name" systemctl restart ssh.service || true
    elif docker inspect "$name" >/dev/null 2>&1; then
      log "WARNING: $name: its container is not running: starting it"
      start_node "$i"
    else
      log "ERROR: $name: no such container; fix: tests/lab/lab up"
      bad=1
      continue
    fi
    if ! ssh_answers "$i"; then
      # Not sshd alone: the node restarts as a machine reboots (its disk kept, /run anew).
      log "WARNING: $name still does not answer: restarting the node"
      docker stop "$name" >/dev/null || true
      start_node "$i"
    fi
    if (wait_node "$i"); then   # (its wait ends on an SSH command that answered)
      log "WARNING: $name answers SSH again (the lines above say what it was)"
    else
      log "ERROR: $name still does not answer SSH"
      bad=1
    fi
  done
  return "$bad"
}

lab_nodes() {  # names of all lab node containers
  docker ps -a --filter label=bws.lab.node --format '{{.Names}}' | LC_ALL=C sort
}

case ${1:-} in
  up)
    n=${2:?nodes} image=${3:?image}
    ((n >= 1 && n <= LAB_NODES_MAX)) || die "--nodes must be 1..$LAB_NODES_MAX (committed host keys)"
    for name in $(lab_nodes); do
      idx=$(docker inspect -f '{{index .Config.Labels "bws.lab.node"}}' "$name")
      ((idx <= n)) || remove_node "$name"
    done
    for ((i = 1; i <= n; i++)); do ensure_node "$i" "$image"; done
    for ((i = 1; i <= n; i++)); do wait_node "$i"; done ;;
  check)
    shift
    (($#)) || die "usage: nodes.sh check I..."
    check "$@" ;;
  down)
    for name in $(lab_nodes); do remove_node "$name"; done
    for vol in $(docker volume ls -q --filter label=bws.lab=1); do
      log "node: removing volume $vol"; docker volume rm "$vol" >/dev/null
    done ;;
  status)
    found=
    for name in $(lab_nodes); do
      found=1
      i=$(docker inspect -f '{{index .Config.Labels "bws.lab.node"}}' "$name")
      cstate=$(docker inspect -f '{{.State.Status}}' "$name")
      sys=-
      [[ $cstate != running ]] || sys=$(docker exec "$name" systemctl is-system-running 2>/dev/null || true)
      printf '%-10s %-9s systemd=%-9s mgmt=%s fabric=%s\n' "$name" "$cstate" "${sys:-?}" \
        "$(node_mgmt_ip "$i")" "$(node_fabric_ip "$i")"
    done
    [[ -n $found ]] || echo "no lab nodes" ;;
  *) die "usage: nodes.sh up N IMAGE | check I... | down | status" ;;
esac
