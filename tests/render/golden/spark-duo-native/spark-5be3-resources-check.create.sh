#!/usr/bin/env bash
# Preflight, before any unit is stopped, read-only: the GPUs the stack declares for this node
# are visible, and the memory it has free covers what its deployments will claim. Units this
# stack retires here are still running: what they hold counts as free (they stop before the
# engine starts); what kept units and anything else hold does not.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'preflight resources' "$*" >&2; bws_said+=("$*"); }
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
    awk) package=mawk ;;
    ps|free) package=procps ;;
    lspci) package=pciutils ;;
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
unit_running() {
  case "$(systemctl is-active "$1" 2>/dev/null)" in active|activating|reloading) return 0 ;; esac
  return 1
}
meminfo_kb() {
  awk -v field="$1:" '$1 == field { kb = $2 } END { print kb + 0 }' "${2:-/proc}/meminfo" 2>/dev/null || echo 0
}
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
proc=/proc
cgroot=/sys/fs/cgroup
node=spark-5be3
need=96000000000
fail() { log "node $node: $*; nothing was stopped"; exit 1; }
gb() { awk -v b="$1" 'BEGIN { printf "%.1f GB", b / 1e9 }'; }
# What the deployments claim here, one line each: BYTES WHAT
claims=$(printf '%s\n' '96000000000 qwen35: memory_fraction 0.8 × 120 GB × 1 GPU (deployments[0].memory_fraction)')
claimed=$(while read -r b what; do printf '%s %s, ' "$what" "$(gb "$b")"; done <<< "$claims")
claimed=${claimed%, }

# The cgroups of the units retired here: each unit's own, and those of the containers it runs
# (`docker run --name NAME` in its unit file), whose processes live outside the unit's cgroup.
retired_cgroups=()
# owner PID: "retired UNIT" when the process is in a retired unit's cgroup, else "other CGROUP"
owner() {
  local cg entry
  cg=$(sed -n 's/^0:://p' "$proc/$1/cgroup" 2>/dev/null || true)
  for entry in "${retired_cgroups[@]}"; do
    case "$cg/" in "${entry%% *}/"*) echo "retired ${entry#* }"; return;; esac
  done
  echo "other ${cg##*/}"
}
# Host memory held by the retired units' cgroups (cgroup v2 memory.current), once each.
retired_host=0
for entry in "${retired_cgroups[@]}"; do
  b=$(cat "$cgroot${entry%% *}/memory.current" 2>/dev/null || echo 0)
  retired_host=$((retired_host + b))
done
avail=$(( $(meminfo_kb MemAvailable "$proc") * 1024 ))

key='nodes[1]'        # the node's entry in nodes:
kind=gb10
want_name=GB10  # what nvidia-smi calls a GPU of that kind
count=1
lower='deployments[0].memory_fraction'
command -v nvidia-smi >/dev/null 2>&1 \
  || fail "nvidia-smi is not installed, so no GPU is visible; fix: install the NVIDIA driver and its utilities on $node"
if ! gpus=$(gpu_query index,uuid,name,memory.total,memory.free 2>&1); then
  fail "nvidia-smi fails: $(tr '\n' ' ' <<< "$gpus"); fix: check the NVIDIA driver on $node (nvidia-smi must list its GPUs)"
fi
seen=$(grep -c . <<< "$gpus" || true)
names=$(awk -F', *' '{ printf "%s%s", (NR > 1 ? "; " : ""), $3 }' <<< "$gpus")
if [ "$seen" -lt "$count" ]; then
  fail "nvidia-smi lists $seen GPU(s) (${names:-none}) but the stack declares $count $kind ($key.gpu.count);" \
       "fix: bind the missing GPUs to the nvidia driver on $node (not vfio-pci for a VM: lspci -nnk -d 10de:)," \
       "or correct $key.gpu.count"
fi
other=$(awk -F', *' -v want="$want_name" -v n="$count" \
  'NR <= n && index($3, want) == 0 { printf "%sGPU %s is %s", (c++ ? "; " : ""), $1, $3 }' <<< "$gpus")
[ -z "$other" ] || fail "$other, not $want_name ($key.gpu.kind $kind); fix: correct $key.gpu.kind"
log "$seen GPU(s) visible: $names"

# The driver's CUDA version: the highest the driver runs (nvidia-smi's header), against what the
# engines here were built for (images[].min_cuda).
header=$(nvidia_header || true)
driver=$(read_driver_version <<< "$header")
driver_cuda=$(read_driver_cuda <<< "$header")
log "driver ${driver:-?} supports CUDA ${driver_cuda:-?}; no images[].min_cuda for the engines here: not compared"

# GPU memory of every compute process: UUID MiB OWNER... (owner: see above).
apps=$(nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits 2>/dev/null || true)
holders=$(while IFS=', ' read -r pid uuid mib; do
  [ -n "$pid" ] || continue
  case "$mib" in ''|*[!0-9]*) mib=0;; esac
  echo "$uuid $mib $pid $(owner "$pid")"
done <<< "$apps")
# The largest holders that stay (kept units, anything not retired): what the fix names.
largest() {
  awk '$4 != "retired" && $2 > 0 { printf "%s %s\n", $2, "pid " $3 " (" $5 ") " sprintf("%.1f GB", $2 * 1048576 / 1e9) }' \
    <<< "$holders" | sort -rn | head -n 3 | cut -d' ' -f2- | paste -sd ';' - | sed 's/;/; /g'
}
fix_tail="stop it or add its unit to retire:, or lower $lower"
retired_here=''
# Unified memory: the GPU allocates from the node's memory, so MemAvailable is what is free.
retired_gpu=$(awk '$4 == "retired" { s += $2 * 1048576 } END { printf "%.0f", s }' <<< "$holders")
have=$((avail + retired_host + retired_gpu))
figures="MemAvailable $(gb "$avail") + $(gb "$((retired_host + retired_gpu))") held by the units retired here${retired_here:+ ($retired_here)} = $(gb "$have") free once they stop; the deployments claim $(gb "$need") ($claimed)"
if [ "$have" -lt "$need" ]; then
  held=$(largest || true)
  [ -n "$held" ] || held=$(ps -eo rss=,pid=,comm= --sort=-rss | head -n 3 \
    | awk '{ printf "%s%s (pid %s) %.1f GB", (NR > 1 ? "; " : ""), $3, $2, $1 * 1024 / 1e9 }' || true)
  fail "short of memory by $(gb "$((need - have))"): $figures; the largest holders that stay: ${held:-none};" \
       "fix: $fix_tail"
fi
log "memory: $figures"
