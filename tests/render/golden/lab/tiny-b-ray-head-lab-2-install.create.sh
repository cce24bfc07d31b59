#!/usr/bin/env bash
# Install (or update) a systemd unit we own, then (re)start it — only when something it runs
# changed: its text (compared with the file on the node before moving into place), the inputs
# it started with (the step's triggers, BWS_INPUTS: the image ID, its secret environment's
# generation), or it is not running. A re-run for any other reason (a new version of this script)
# restarts nothing. Its secrets are another step's (install-env.sh.j2), never on this one's stdin.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'unit bws-tiny-b-ray-head.service' "$*" >&2; bws_said+=("$*"); }
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
unit_path=/etc/systemd/system/bws-tiny-b-ray-head.service
# The triggers the running unit was started with (written at each restart done here).
record_dir=/var/lib/blackwell-serving/units
record="$record_dir"/bws-tiny-b-ray-head.service.inputs
inputs="${BWS_INPUTS-}"
install -d -m 0755 "$record_dir"
cat > "$unit_path.tmp" <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (RayCluster tiny-b-ray); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving Ray head (tiny-b-ray)
After=docker.service network-online.target
Wants=network-online.target
# Never give up restarting (the RestartSec below spaces the tries; systemd 254+ could grow it,
# Debian 12's 252 cannot): the watchdog and the preview report an engine that keeps failing.
StartLimitIntervalSec=0
Requires=docker.service

[Service]
Type=simple
Environment="NCCL_SOCKET_IFNAME=eth1"
Environment="GLOO_SOCKET_IFNAME=eth1"
Environment="TP_SOCKET_IFNAME=eth1"
Environment="UCX_NET_DEVICES=eth1"
Environment="NCCL_IB_GID_INDEX=3"
Environment="NCCL_IB_DISABLE=1"
Environment="VLLM_HOST_IP=198.19.0.12"
Environment="SGLANG_HOST_IP=198.19.0.12"
Environment="RAY_NODE_IP_ADDRESS=198.19.0.12"
Environment="VLLM_CPU_KVCACHE_SPACE=1"
ExecStartPre="/usr/bin/mkdir" "-p" "/var/lib/blackwell-serving/ray/tiny-b-ray"
ExecStartPre=-/usr/bin/docker rm -f "bws-tiny-b-ray-head"
ExecStart=/usr/bin/docker run --rm --name "bws-tiny-b-ray-head" \
  "--network" \
  "host" \
  "--init" \
  "--shm-size" \
  "2g" \
  "-v" \
  "/var/lib/blackwell-serving/models:/var/lib/blackwell-serving/models:ro" \
  "-v" \
  "/var/lib/blackwell-serving/ray/tiny-b-ray:/tmp/ray" \
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
  "NCCL_IB_DISABLE" \
  "-e" \
  "VLLM_HOST_IP" \
  "-e" \
  "SGLANG_HOST_IP" \
  "-e" \
  "RAY_NODE_IP_ADDRESS" \
  "-e" \
  "VLLM_CPU_KVCACHE_SPACE" \
  "blackwell-serving/vllm-lab:2b5ceeb6797a" \
  "ray" \
  "start" \
  "--head" \
  "--block" \
  "--node-ip-address=198.19.0.12" \
  "--port=6379" \
  "--object-store-memory=536870912" \
  "--include-dashboard=false" \
  "--disable-usage-stats"
ExecStop=/usr/bin/docker stop -t 30 "bws-tiny-b-ray-head"
Restart=always
RestartSec=10
TimeoutStartSec=infinity
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
BWS_UNIT_EOF
written="$record_dir"/bws-tiny-b-ray-head.service.written
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
rm -f /var/lib/blackwell-serving/units/bws-tiny-b-ray-head.service.put-back
# systemd reads the file again when it changed, or when it had lost it (not-found).
loaded=$(systemctl show -p NeedDaemonReload,LoadState bws-tiny-b-ray-head.service 2>/dev/null || true)
case "$loaded" in
  *NeedDaemonReload=yes*|*LoadState=not-found*) loaded=stale ;;
esac
if [ -n "$why" ] || [ "$loaded" = stale ]; then
  systemctl daemon-reload
fi
systemctl enable bws-tiny-b-ray-head.service >/dev/null 2>&1
if [ -z "$why" ] && ! systemctl is-active --quiet bws-tiny-b-ray-head.service; then
  why="it is not running"
elif [ -z "$why" ] && [ -f "$record" ]; then
  if [ "$(cat "$record")" != "$inputs" ]; then why="its inputs changed (image or environment)"; fi
elif [ -z "$why" ]; then
  # Installed by an earlier version, which restarted it at each run: it runs what that run
  # wrote,
  # or its container runs an image other than the one its inputs name.
  running=$(docker inspect --format '{{.Image}}' bws-tiny-b-ray-head 2>/dev/null || true)
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
  systemctl reset-failed bws-tiny-b-ray-head.service 2>/dev/null || true
  systemctl restart bws-tiny-b-ray-head.service
  printf '%s\n' "$inputs" > "$record.tmp"
  mv -f "$record.tmp" "$record"
  sleep 2
  if ! systemctl is-active --quiet bws-tiny-b-ray-head.service; then
    log "did not stay up; last lines of its journal:"
    journalctl -u bws-tiny-b-ray-head.service -n 30 --no-pager >&2 || true
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
retire_older_tags blackwell-serving/vllm-lab:2b5ceeb6797a
# This start's identity: the gates that check what the unit serves run again after every restart
# done here (components/unit.py: SystemdUnit.started); unchanged when nothing was restarted.
echo "started=$(systemctl show -p InvocationID --value bws-tiny-b-ray-head.service)"
