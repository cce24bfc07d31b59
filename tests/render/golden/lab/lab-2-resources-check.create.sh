#!/usr/bin/env bash
# Preflight, before any unit is stopped, read-only: the GPUs the stack declares for this node
# are visible, and the memory it has free covers what its deployments will claim. Units this
# stack retires here are still running: what they hold counts as free (they stop before the
# engine starts); what kept units and anything else hold does not.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'preflight resources' "$*" >&2; }
proc=/proc
cgroot=/sys/fs/cgroup
node=lab-2
need=25600000000
fail() { log "node $node: $*; nothing was stopped"; exit 1; }
gb() { awk -v b="$1" 'BEGIN { printf "%.1f GB", b / 1e9 }'; }
# What the deployments claim here, one line each: BYTES WHAT
claims=$(printf '%s\n' '12800000000 tiny: memory_fraction 0.8 × 16 GB × 1 GPU (deployments[0].memory_fraction)' '12800000000 tiny-b: memory_fraction 0.8 × 16 GB × 1 GPU (deployments[1].memory_fraction)')
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
avail=$(( $(awk '/^MemAvailable:/ { print $2 }' "$proc/meminfo") * 1024 ))

log "no GPU expected: the stack declares none on $node ("'nodes[1].gpu.kind cpu'"); nvidia-smi, driver CUDA and container GPU checks not run"
# A CPU engine's claim arithmetic says nothing of what it takes: the figures, not a verdict.
log "memory: MemAvailable $(gb "$avail"); the deployments' claim arithmetic $(gb "$need") ($claimed); not enforced on gpu.kind cpu"
