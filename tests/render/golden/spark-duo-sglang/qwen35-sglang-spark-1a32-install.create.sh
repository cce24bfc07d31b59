#!/usr/bin/env bash
# Install (or update) a systemd unit we own, then (re)start it — only when something it runs
# changed: its text (compared with the file on the node before moving into place), the inputs
# it started with (the step's triggers, BWS_INPUTS: the image ID, its secret environment's
# generation), or it is not running. A re-run for any other reason (a new version of this script)
# restarts nothing. Its secrets are another step's (install-env.sh.j2), never on this one's stdin.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'unit bws-qwen35-sglang.service' "$*" >&2; bws_said+=("$*"); }
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
    systemctl|journalctl) package=systemd ;;
    awk) package=mawk ;;
    python3) package=python3 ;;
    ps) package=procps ;;
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
unit_path=/etc/systemd/system/bws-qwen35-sglang.service
# The triggers the running unit was started with (written at each restart done here).
record_dir=/var/lib/blackwell-serving/units
record="$record_dir"/bws-qwen35-sglang.service.inputs
inputs="${BWS_INPUTS-}"
install -d -m 0755 "$record_dir"
cat > "$unit_path.tmp" <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Deployment qwen35-sglang); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving sglang qwen35-sglang (rank 0)
After=docker.service network-online.target
Wants=network-online.target
# Never give up restarting (the RestartSec below spaces the tries; systemd 254+ could grow it,
# Debian 12's 252 cannot): the watchdog and the preview report an engine that keeps failing.
StartLimitIntervalSec=0
Requires=docker.service

[Service]
Type=simple
Environment="NCCL_SOCKET_IFNAME=enp1s0f1np1"
Environment="GLOO_SOCKET_IFNAME=enp1s0f1np1"
Environment="TP_SOCKET_IFNAME=enp1s0f1np1"
Environment="UCX_NET_DEVICES=enp1s0f1np1"
Environment="NCCL_IB_GID_INDEX=3"
Environment="NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1"
Environment="VLLM_HOST_IP=192.168.200.12"
Environment="SGLANG_HOST_IP=192.168.200.12"
Environment="RAY_NODE_IP_ADDRESS=192.168.200.12"
Environment="HF_HUB_OFFLINE=1"
ExecStartPre="/bin/sh" "-c" "sync && echo 3 > /proc/sys/vm/drop_caches"
ExecStartPre=-/usr/bin/docker rm -f "bws-qwen35-sglang"
ExecStart=/usr/bin/docker run --rm --name "bws-qwen35-sglang" \
  "--network" \
  "host" \
  "--ipc" \
  "host" \
  "--gpus" \
  "all" \
  "--init" \
  "--shm-size" \
  "32g" \
  "--ulimit" \
  "memlock=-1:-1" \
  "--device" \
  "/dev/infiniband" \
  "--cap-add" \
  "IPC_LOCK" \
  "-v" \
  "/var/lib/blackwell-serving/models:/var/lib/blackwell-serving/models:ro" \
  "--mount" \
  "type=bind,source=/etc/blackwell-serving/qwen35-sglang.env,target=/run/secrets/blackwell-serving.env,readonly" \
  "-e" \
  "NCCL_SOCKET_IFNAME" \
  "-e" \
  "GLOO_SOCKET_IFNAME" \
  "-e" \
  "TP_SOCKET_IFNAME" \
  "-e" \
  "UCX_NET_DEVICES" \
  "-e" \
  "NCCL_IB_GID_INDEX" \
  "-e" \
  "NCCL_IB_HCA" \
  "-e" \
  "VLLM_HOST_IP" \
  "-e" \
  "SGLANG_HOST_IP" \
  "-e" \
  "RAY_NODE_IP_ADDRESS" \
  "-e" \
  "HF_HUB_OFFLINE" \
  "blackwell-serving/sglang-spark:3179620c3637" \
  "/bin/sh" \
  "-c" \
  "while IFS= read -r kv; do export \"$$kv\"; done < /run/secrets/blackwell-serving.env && exec \"$$@\"" \
  "engine" \
  "python3" \
  "-m" \
  "sglang.launch_server" \
  "--model-path" \
  "/var/lib/blackwell-serving/models/Qwen--Qwen3.5-122B-A10B-FP8--0000000000000000000000000000000000000000" \
  "--served-model-name" \
  "qwen3.5-122b" \
  "--host" \
  "0.0.0.0" \
  "--port" \
  "30000" \
  "--tp" \
  "2" \
  "--mem-fraction-static" \
  "0.8" \
  "--context-length" \
  "131072" \
  "--kv-cache-dtype" \
  "auto" \
  "--nnodes" \
  "2" \
  "--node-rank" \
  "0" \
  "--dist-init-addr" \
  "192.168.200.12:20000" \
  "--tool-call-parser" \
  "qwen3_coder" \
  "--reasoning-parser" \
  "qwen3" \
  "--enable-metrics"
ExecStop=/usr/bin/docker stop -t 30 "bws-qwen35-sglang"
Restart=on-failure
RestartSec=10
TimeoutStartSec=infinity
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
BWS_UNIT_EOF
written="$record_dir"/bws-qwen35-sglang.service.written
why=""
if cmp -s "$unit_path.tmp" "$unit_path"; then
  rm -f "$unit_path.tmp"
elif [ ! -e "$unit_path" ] && [ -f "$written" ] \
    && [ "$(sha256sum < "$unit_path.tmp" | cut -d' ' -f1)" = "$(cat "$written")" ]; then
  # Its file was removed on the node, and this text is the one written here before, which the
  # unit runs: put back; it restarts only for the reasons below (not running, new inputs).
  mv -f "$unit_path.tmp" "$unit_path"
  log "its file was removed on the node: put back"
else
  mv -f "$unit_path.tmp" "$unit_path"
  why="its text changed"
fi
# The hash of the text written here: the observation tells a file edited on the node (it differs
# from this) from a config change (the program's text differs from this; components/facts/unit_state.py).
sha256sum < "$unit_path" | cut -d' ' -f1 > "$written"
rm -f /var/lib/blackwell-serving/units/bws-qwen35-sglang.service.put-back
# systemd reads the file again when it changed, or when it had lost it (not-found).
loaded=$(systemctl show -p NeedDaemonReload,LoadState bws-qwen35-sglang.service 2>/dev/null || true)
case "$loaded" in
  *NeedDaemonReload=yes*|*LoadState=not-found*) loaded=stale ;;
esac
if [ -n "$why" ] || [ "$loaded" = stale ]; then
  systemctl daemon-reload
fi
systemctl enable bws-qwen35-sglang.service >/dev/null 2>&1
if [ -z "$why" ] && ! systemctl is-active --quiet bws-qwen35-sglang.service; then
  why="it is not running"
elif [ -z "$why" ] && [ -f "$record" ]; then
  if [ "$(cat "$record")" != "$inputs" ]; then why="its inputs changed (image or environment)"; fi
elif [ -z "$why" ]; then
  # Installed by an earlier version, which restarted it at each run: it runs what that run
  # wrote, unless its environment file was rewritten after it started,
  # or its container runs an image other than the one its inputs name.
  env_path=/etc/blackwell-serving/qwen35-sglang.env
  since=$(date -d "$(systemctl show -p ActiveEnterTimestamp --value bws-qwen35-sglang.service)" +%s 2>/dev/null || echo 0)
  if [ ! -f "$env_path" ] || [ "$(stat -c %Y "$env_path")" -gt "$since" ]; then
    why="its environment changed"
  fi
  running=$(docker inspect --format '{{.Image}}' bws-qwen35-sglang 2>/dev/null || true)
  case " $inputs " in
    *" ${running:-none} "*) ;;
    *) why="its container runs another image" ;;
  esac
  if [ -z "$why" ]; then printf '%s\n' "$inputs" > "$record"; fi
fi
if [ -z "$why" ]; then
  log "unchanged and running: not restarted"
else
  log "restarting: $why"
  # A unit systemd gave up on (failed, start limit hit) starts again only once reset.
  systemctl reset-failed bws-qwen35-sglang.service 2>/dev/null || true
  # A swap: the old engine's memory back before the new one starts (_memory_release.sh.j2).
  if systemctl is-active --quiet bws-qwen35-sglang.service; then
meminfo_kb() {
  awk -v field="$1:" '$1 == field { kb = $2 } END { print kb + 0 }' "${2:-/proc}/meminfo" 2>/dev/null || echo 0
}
mem_available() { echo $(( $(meminfo_kb MemAvailable) * 1024 )); }
held_by() {  # UNIT [CONTAINER] -> bytes of anon + shmem in its cgroup (0 when unknown)
  # cgroup v2: the unified tree. v1 (a hybrid host, such as the lab's, whose unified tree has no
  # memory controller and showed nothing held): the memory controller's tree, children included.
  local root=/sys/fs/cgroup keys="anon shmem" cg="" pid=""
  [ -d /sys/fs/cgroup/memory ] && root=/sys/fs/cgroup/memory keys="total_rss total_shmem"
  if [ -n "${2:-}" ]; then
    pid=$(docker inspect --format '{{.State.Pid}}' "$2" 2>/dev/null || true)
  fi
  if [ -n "$pid" ] && [ "$pid" != 0 ]; then
    # /proc/PID/cgroup: "0::PATH" (v2), "N:...,memory,...:PATH" (v1)
    cg=$(awk -F: -v v1="${root#/sys/fs/cgroup}" '(v1 ? $2 ~ /(^|,)memory(,|$)/ : $1 == 0) { sub(/^[^:]*:[^:]*:/, ""); print }' \
      "/proc/$pid/cgroup" 2>/dev/null || true)
  fi
  [ -n "$cg" ] || cg=$(systemctl show -p ControlGroup --value "$1" 2>/dev/null || true)
  # A path from outside this machine's cgroup root (a node that is itself a container): the
  # longest tail of it that is there.
  while [ -n "$cg" ] && [ ! -r "$root$cg/memory.stat" ] && [ "${cg#/*/}" != "$cg" ]; do
    cg="/${cg#/*/}"
  done
  if [ -n "$cg" ] && [ -r "$root$cg/memory.stat" ]; then
    awk -v keys=" $keys " 'index(keys, " " $1 " ") { sum += $2 } END { printf "%.0f", sum }' "$root$cg/memory.stat"
  else
    echo 0
  fi
}
stop_and_await_release() {
  local unit=$1 container=${2:-} bound=1000000000 held before due now deadline
  held=$(held_by "$unit" "$container")
  before=$(mem_available)
  systemctl stop "$unit"
  due=$(( before + held - bound ))
  deadline=$(( $(date +%s) + 120 ))
  while now=$(mem_available); [ "$now" -lt "$due" ]; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "$unit held $(( held / 1000000 )) MB; $(( 120 )) s after its stop MemAvailable is" \
          "$(( now / 1000000 )) MB, short of the $(( due / 1000000 )) MB due (it was $(( before / 1000000 )) MB;" \
          "bound $(( bound / 1000000 )) MB): its memory is not back, so the new engine is not started; fix: find what" \
          "holds it (a process outside the unit, files in /dev/shm) or raise memory_release.bound_gb"
      exit 1
    fi
    sleep 2
  done
  log "$unit stopped: $(( held / 1000000 )) MB back (MemAvailable $(( before / 1000000 )) -> $(( now / 1000000 )) MB)"
}
    stop_and_await_release bws-qwen35-sglang.service bws-qwen35-sglang
  fi
  systemctl restart bws-qwen35-sglang.service
  printf '%s\n' "$inputs" > "$record.tmp"
  mv -f "$record.tmp" "$record"
  sleep 2
  if ! systemctl is-active --quiet bws-qwen35-sglang.service; then
    log "did not stay up; last lines of its journal:"
    journalctl -u bws-qwen35-sglang.service -n 30 --no-pager >&2 || true
    exit 1
  fi
  log "active"
fi
retire_older_tags() {
  local keep=$1 listed ref id
  case "$keep" in blackwell-serving/*:*) ;; *) return 0 ;; esac
  listed=$(docker image ls --format '{{.Repository}}:{{.Tag}} {{.ID}}' "${keep%:*}" 2>/dev/null) || return 0
  while read -r ref id; do
    case "$ref" in ""|"$keep"|*:"<none>"|*-staging) continue ;; esac
    if [ -z "$(docker ps -aq --filter "ancestor=$id" 2>/dev/null)" ] && docker image rm "$ref" >/dev/null 2>&1; then
      log "removed $ref: no container uses it (this image is now $keep)"
    fi
  done <<< "$listed"
}
retire_older_tags blackwell-serving/sglang-spark:3179620c3637
# This start's identity: the gates that check what the unit serves run again after every restart
# done here (components/unit.py: SystemdUnit.started); unchanged when nothing was restarted.
echo "started=$(systemctl show -p InvocationID --value bws-qwen35-sglang.service)"
