# shellcheck shell=bash
# Common helpers for the lab scripts: paths, topology, logging. Sourced, not run.
set -euo pipefail

LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$LAB_DIR/../.." && pwd)
# exported: the scripts run by `lab up` (tests/lab/engine/prepare.sh) see the topology too
set -a
# shellcheck source=lab.env
. "$LAB_DIR/lab.env"
set +a
# shellcheck source=../../scripts/cache.sh
. "$REPO_ROOT/scripts/cache.sh"
export LAB_CACHE="$BLACKWELL_CACHE/lab"
# shellcheck disable=SC2034  # used by the scripts that source this file
STATE="$REPO_ROOT/$LAB_STATE_DIR"

log() { printf '[lab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=detached.sh
. "$LAB_DIR/detached.sh"

node_name() { printf '%s%s' "$LAB_NODE_PREFIX" "$1"; }
node_mgmt_ip() { printf '%s%s' "$LAB_MGMT_IP_PREFIX" "$1"; }
node_fabric_ip() { printf '%s%s' "$LAB_FABRIC_IP_PREFIX" "$1"; }
node_volume() { printf '%s%s-docker' "$LAB_NODE_PREFIX" "$1"; }

# sha256 of files' names and contents (stable order), short form
hash_files() {
  local f
  for f in "$@"; do
    printf '%s\n' "${f#"$LAB_DIR"/}"
    sha256sum <"$f"
  done | sha256sum | cut -c1-16
}

lab_ssh() {  # lab_ssh <node-index> <command...>: ssh as the operator over mgmt
  local i=$1; shift
  ssh -i "$REPO_ROOT/$LAB_SSH_KEY" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$REPO_ROOT/$LAB_KNOWN_HOSTS" \
    -o ConnectTimeout=5 "$LAB_SSH_USER@$(node_mgmt_ip "$i")" "$@"
}
