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
    free) package=procps ;;
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
node=llm-server
need=326400000000
fail() { log "node $node: $*; nothing was stopped"; exit 1; }
gb() { awk -v b="$1" 'BEGIN { printf "%.1f GB", b / 1e9 }'; }
# What the deployments claim here, one line each: BYTES WHAT
claims=$(printf '%s\n' '326400000000 qwen35-397b: memory_fraction 0.85 × 96 GB × 4 GPUs (deployments[0].memory_fraction)')
claimed=$(while read -r b what; do printf '%s %s, ' "$what" "$(gb "$b")"; done <<< "$claims")
claimed=${claimed%, }

# The cgroups of the units retired here: each unit's own, and those of the containers it runs
# (`docker run --name NAME` in its unit file), whose processes live outside the unit's cgroup.
retired_cgroups=()
if unit_running sglang-kimi.service; then
  cg=$(systemctl show -p ControlGroup --value sglang-kimi.service 2>/dev/null || true)
  [ -z "$cg" ] || retired_cgroups+=("$cg "sglang-kimi.service)
  for name in $(systemctl cat sglang-kimi.service 2>/dev/null | grep -oE -- '--name[= ]+[A-Za-z0-9_.-]+' \
                | sed -E 's/--name[= ]+//' || true); do
    pid=$(docker inspect --format '{{.State.Pid}}' "$name" 2>/dev/null || echo 0)
    [ "${pid:-0}" -gt 0 ] || continue
    cg=$(sed -n 's/^0:://p' "$proc/$pid/cgroup" 2>/dev/null || true)
    [ -z "$cg" ] || retired_cgroups+=("$cg "sglang-kimi.service)
  done
fi
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

key='nodes[0]'        # the node's entry in nodes:
kind=rtx-pro-6000
want_name='RTX PRO 6000'  # what nvidia-smi calls a GPU of that kind
count=4
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
need_cuda=13.0
cuda_key='images[0].min_cuda'
cuda_image=sglang-main
driver_hint=' (Linux driver 580.65.06 or newer)'
[ -n "$driver_cuda" ] || fail "nvidia-smi's header names no CUDA Version ($(head -n 3 <<< "$header" | tr -s ' \n' ' '));" \
  "fix: check the NVIDIA driver on $node (nvidia-smi must print 'CUDA Version:')"
if ! awk -v have="$driver_cuda" -v want="$need_cuda" 'BEGIN { split(have, h, "."); split(want, w, ".");
       exit !(h[1] + 0 > w[1] + 0 || (h[1] + 0 == w[1] + 0 && h[2] + 0 >= w[2] + 0)) }'; then
  fail "the NVIDIA driver ${driver:-of unknown version} supports CUDA $driver_cuda, but image $cuda_image needs" \
       "CUDA $need_cuda ($cuda_key); fix: install an NVIDIA driver for CUDA $need_cuda on $node${driver_hint}," \
       "or correct $cuda_key if the engine was built for an older CUDA"
fi
log "driver ${driver:-?} supports CUDA $driver_cuda; image $cuda_image needs $need_cuda ($cuda_key)"

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
# Each GPU's own memory: free plus what retired units' processes hold on it, against the claim
# spread over the declared GPUs.
per_gpu=$(( (need + count - 1) / count ))
short=""
while IFS=', ' read -r index uuid name; do
  total=$(awk -F', *' -v u="$uuid" '$2 == u { print $4 }' <<< "$gpus")
  free=$(awk -F', *' -v u="$uuid" '$2 == u { print $5 }' <<< "$gpus")
  case "$free" in ''|*[!0-9]*) fail "nvidia-smi reports no free memory for GPU $index ($free); fix: check the driver on $node";; esac
  back=$(awk -v u="$uuid" '$1 == u && $4 == "retired" { s += $2 } END { printf "%.0f", s }' <<< "$holders")
  have=$(( (free + back) * 1048576 ))
  if [ "$have" -lt "$per_gpu" ]; then
    short+="GPU $index: $(gb "$((free * 1048576))") free + $(gb "$((back * 1048576))") of retired units of $(gb "$((total * 1048576))"); "
  fi
done < <(awk -F', *' -v n="$count" 'NR <= n { print $1 ", " $2 ", " $3 }' <<< "$gpus")
figures="each of $count GPUs needs $(gb "$per_gpu") ($claimed)"
if [ -n "$short" ]; then
  held=$(largest || true)
  fail "GPU memory is short: ${short}$figures; the largest holders that stay: ${held:-none}; fix: $fix_tail"
fi
log "GPU memory: $figures; every GPU has it free once the units retired here stop (host MemAvailable $(gb "$avail"))"
