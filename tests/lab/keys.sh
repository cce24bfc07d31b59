#!/usr/bin/env bash
# Client-side SSH material in tests/lab/.state/ (git-ignored), generated once:
#   id_ed25519          the operator's key (host -> nodes, root)
#   fabric_id_ed25519   the "fabric peer" key every node's root holds (node -> node)
#   known_hosts         every lab node's committed host key, by name, mgmt and fabric ip
#   ssh_config          Host bws-lab-<i> entries using the above
#   api-key, gateway-key  the lab stack's API keys (its deployments', its gateway's)
. "$(dirname "$0")/lib.sh"

mkdir -p "$STATE"
chmod 0700 "$STATE"
for key in id_ed25519 fabric_id_ed25519; do
  if [[ ! -s $STATE/$key ]]; then
    log "keys: generating $LAB_STATE_DIR/$key"
    ssh-keygen -q -t ed25519 -N '' -C "bws-lab ${key%%_*} key" -f "$STATE/$key"
  fi
  chmod 0600 "$STATE/$key"
done
# The lab stack's API keys (the deployments' and the gateway's): random, root-only, made once.
for key in api-key gateway-key; do
  if [[ ! -s $STATE/$key ]]; then
    log "keys: generating $LAB_STATE_DIR/$key"
    (umask 077 && head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$STATE/$key")
  fi
done

{
  for ((i = 1; i <= LAB_NODES_MAX; i++)); do
    read -r type key _ <"$LAB_DIR/hostkeys/$(node_name "$i")/ssh_host_ed25519_key.pub"
    printf '%s,%s,%s %s %s\n' "$(node_name "$i")" "$(node_mgmt_ip "$i")" "$(node_fabric_ip "$i")" "$type" "$key"
  done
} >"$STATE/known_hosts.tmp"
mv "$STATE/known_hosts.tmp" "$STATE/known_hosts"

{
  for ((i = 1; i <= LAB_NODES_MAX; i++)); do
    printf 'Host %s\n  HostName %s\n' "$(node_name "$i")" "$(node_mgmt_ip "$i")"
  done
  printf 'Host %s* %s* %s*\n' "$LAB_NODE_PREFIX" "$LAB_MGMT_IP_PREFIX" "$LAB_FABRIC_IP_PREFIX"
  printf '  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n' "$LAB_SSH_USER" "$STATE/id_ed25519"
  printf '  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n' "$STATE/known_hosts"
} >"$STATE/ssh_config"
