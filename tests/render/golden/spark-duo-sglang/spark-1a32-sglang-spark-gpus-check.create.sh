#!/usr/bin/env bash
# Preflight, before any unit is stopped, read-only: a container of the engine image, started
# with --gpus all as the engine's is, lists the GPUs of this node (the NVIDIA container toolkit
# works with this Docker). Bounded: a hung runtime hook fails the check, not the up.
# An image built on NVIDIA's CUDA images declares the CUDA it needs (NVIDIA_REQUIRE_CUDA), which
# the NVIDIA runtime enforces when it starts the container: so this also checks the driver
# against the image itself, without images[].min_cuda (said in the log; explained on failure).
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'preflight container gpus' "$*" >&2; bws_said+=("$*"); }
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
    systemctl) package=systemd ;;
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
node=spark-1a32
key='nodes[0]'
image=sglang-spark
tag=blackwell-serving/sglang-spark:3179620c3637
count=1
bound=120
fail() { log "node $node: $*; nothing was stopped"; exit 1; }
gpu_query() {
  timeout -k 5 "${2:-30}" nvidia-smi --query-gpu="$1" --format=csv,noheader,nounits
}
nvidia_header() {
  timeout -k 5 30 nvidia-smi 2>&1 | head -n 6
}
read_driver_version() {
  sed -n 's/.*Driver Version: *\([0-9][0-9.]*\).*/\1/p' | head -n 1
}
read_driver_cuda() {
  sed -n 's/.*CUDA Version: *\([0-9][0-9]*\(\.[0-9][0-9]*\)*\).*/\1/p' | head -n 1
}
fix="fix: install the NVIDIA Container Toolkit on $node and register it with Docker (nvidia-ctk runtime configure --runtime=docker; systemctl restart docker)"
requires=$(timeout -k 5 30 docker image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$tag" 2>/dev/null \
  | sed -n 's/^NVIDIA_REQUIRE_CUDA=\([^ ]*\).*/\1/p' | head -n 1)
rc=0
out=$(timeout -k 10 "$bound" docker run --rm --gpus all --entrypoint nvidia-smi "$tag" -L 2>&1) || rc=$?
said=$(tr -s '\n' ' ' <<< "$out" | cut -c1-400)
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  fail "docker run --gpus all $tag nvidia-smi -L did not finish in $bound s; $fix"
fi
if [ "$rc" -ne 0 ] && grep -q 'unsatisfied condition: cuda' <<< "$out"; then
  driver_cuda=$(nvidia_header 2>/dev/null | read_driver_cuda)
  fail "image $image requires ${requires:-a newer CUDA} (its NVIDIA_REQUIRE_CUDA) and the driver on $node supports" \
       "CUDA ${driver_cuda:-?}, so the NVIDIA runtime refuses to start it ($said); fix: install an NVIDIA driver for" \
       "that CUDA on $node, or use an image built for CUDA ${driver_cuda:-the driver supports}"
fi
[ "$rc" -eq 0 ] || fail "a container of image $image ($tag) does not see the GPUs: docker run --gpus all ... nvidia-smi -L exits $rc: $said; $fix"
seen=$(grep -c '^GPU [0-9]' <<< "$out" || true)
if [ "$seen" -lt "$count" ]; then
  fail "a container of image $image sees $seen GPU(s) ($said), the host has $count ($key.gpu.count); $fix, and check NVIDIA_VISIBLE_DEVICES in the image"
fi
log "a container of image $image sees $seen GPU(s): $(grep '^GPU [0-9]' <<< "$out" | cut -d'(' -f1 | paste -sd ';' - | sed 's/;/; /g')"
log "image $image requires ${requires:-no CUDA version (no NVIDIA_REQUIRE_CUDA in its environment)}"
