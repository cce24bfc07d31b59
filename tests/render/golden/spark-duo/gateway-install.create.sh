#!/usr/bin/env bash
# Install (or update) the gateway: its routes (the LiteLLM config), its key check (the config's
# custom_auth module) and its unit, then restart it. The engine runs this only when the routes,
# the key check, the unit, the image or its keys' generation changed (its keys are written by its
# env step, install-env.sh.j2); the engines' units are other steps and are not touched.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'gateway bws-gateway.service' "$*" >&2; bws_said+=("$*"); }
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
unit_path=/etc/systemd/system/bws-gateway.service
config_dir=/etc/blackwell-serving/gateway
config_path=/etc/blackwell-serving/gateway/litellm.yaml
install -d -m 0700 "$config_dir"
umask 077
# The routes: root-only, mounted read-only into the container.
cat > "$config_path.tmp" <<'BWS_GATEWAY_CONFIG_EOF'
# Managed by blackwell-serving (Gateway): LiteLLM proxy routes, one per model name, written by
# `pulumi up` when they change (do not edit on the node). No secret here: every key is
# `os.environ/VAR`, a line of the root-only env file mounted beside it.
model_list:
  # deployment qwen35
  - model_name: "qwen3.5-122b"
    litellm_params:
      model: "openai/qwen3.5-122b"
      api_base: "http://127.0.0.1:8000/v1"
      api_key: "os.environ/BWS_DEPLOYMENT_KEY_QWEN35"
      timeout: 600
      stream_timeout: 600
    model_info:
      mode: "chat"
  # upstream embeddings
  - model_name: "embeddings"
    litellm_params:
      model: "openai/embeddings"
      api_base: "http://192.168.200.13:8001/v1"
      api_key: "none"
      timeout: 600
      stream_timeout: 600
    model_info:
      mode: "embedding"
litellm_settings:
  telemetry: false
  request_timeout: 600
  # An upstream's error is the client's answer: no retry on another route.
  num_retries: 0
  # /metrics for the stack's Prometheus (LiteLLM's prometheus callback; without LiteLLM's
  # enterprise licence it serves the process's own metrics).
  callbacks: ["prometheus"]
general_settings:
  master_key: "os.environ/LITELLM_MASTER_KEY"
  # The key check (bws_key_check.py beside this file): the master key accepted, anything else
  # refused with 401 and OpenAI's error body (LiteLLM alone answers a wrong key 400 "No connected
  # db." without a database); LiteLLM's own checks still run after it.
  custom_auth: "bws_key_check.check_key"
  custom_auth_run_common_checks: true
BWS_GATEWAY_CONFIG_EOF
chmod 0600 "$config_path.tmp"
mv -f "$config_path.tmp" "$config_path"
# The key check the routes name (custom_auth): 401 for a missing or wrong key. No secret in it.
key_check_path=/etc/blackwell-serving/gateway/bws_key_check.py
cat > "$key_check_path.tmp" <<'BWS_GATEWAY_KEY_CHECK_EOF'
# Managed by blackwell-serving (Gateway): the gateway's key check, LiteLLM's
# `general_settings.custom_auth` (components/gateway.py says why), written by `pulumi up` beside
# the routes and mounted read-only into the container (do not edit on the node).
#
# LiteLLM without a database answers any key but its master key with HTTP 400 "No connected db."
# (it looks such keys up as virtual keys in the database it does not have). An OpenAI-compatible
# endpoint answers a wrong or missing key with 401 and OpenAI's error body, which is what clients,
# their retry logic and monitoring act on. This check runs in place of LiteLLM's own for every
# authenticated route: the one key of the stack (LiteLLM's master key, as the config names it)
# is accepted as the master key is; anything else is refused with 401. The key is never logged,
# never echoed in an answer, never handed on (the caller's identity carries LiteLLM's alias for
# the master key, as its own master-key path does).
"""The gateway's key check: 401 and OpenAI's error body for a missing or wrong key."""

import secrets

from litellm.proxy._types import LitellmUserRoles, ProxyException, UserAPIKeyAuth

try:  # what LiteLLM's own master-key path names the caller (1.106.12; older images lack the name)
    from litellm.constants import LITELLM_PROXY_MASTER_KEY_ALIAS
except ImportError:
    LITELLM_PROXY_MASTER_KEY_ALIAS = "litellm_proxy_master_key"

MISSING = ("You didn't provide an API key. Send it as a bearer token: "
           "`Authorization: Bearer KEY` (the gateway's key, gateway.api_key).")
WRONG = "Incorrect API key provided. Use the gateway's key (gateway.api_key of the stack)."
UNSET = "The gateway has no key configured, so it accepts none; ask its operator."


def refused(message: str) -> ProxyException:
    """401 with OpenAI's body: {"error": {"message", "type", "param", "code"}}."""
    return ProxyException(message=message, type="invalid_request_error", param=None, code=401)


def accepted(api_key, master_key) -> bool:
    """Whether `api_key` (the request's key, its `Bearer ` taken off) is the gateway's key."""
    if not isinstance(master_key, str) or not master_key:
        raise refused(UNSET)
    if not isinstance(api_key, str) or not api_key:
        raise refused(MISSING)
    if not secrets.compare_digest(api_key.encode(), master_key.encode()):
        raise refused(WRONG)
    return True


async def check_key(request, api_key):
    """LiteLLM's custom_auth hook: the caller's identity, or a 401."""
    from litellm.proxy import proxy_server  # the master key as LiteLLM resolved it from the config

    accepted(api_key, proxy_server.master_key)
    return UserAPIKeyAuth(api_key=LITELLM_PROXY_MASTER_KEY_ALIAS, user_role=LitellmUserRoles.PROXY_ADMIN,
                          user_id=proxy_server.litellm_proxy_admin_name)
BWS_GATEWAY_KEY_CHECK_EOF
chmod 0600 "$key_check_path.tmp"
mv -f "$key_check_path.tmp" "$key_check_path"
umask 022
cat > "$unit_path.tmp" <<'BWS_UNIT_EOF'
# Managed by blackwell-serving (Gateway); edits are drift and are reverted by `pulumi up`.
[Unit]
Description=blackwell-serving gateway (LiteLLM) on port 4000
After=docker.service network-online.target
Wants=network-online.target
# Never give up restarting (the RestartSec below spaces the tries; systemd 254+ could grow it,
# Debian 12's 252 cannot): the watchdog and the preview report an engine that keeps failing.
StartLimitIntervalSec=0
Requires=docker.service

[Service]
Type=simple
Environment="LITELLM_LOCAL_MODEL_COST_MAP=True"
Environment="LITELLM_TELEMETRY=False"
ExecStartPre=-/usr/bin/docker rm -f "bws-gateway"
ExecStart=/usr/bin/docker run --rm --name "bws-gateway" \
  "--network" \
  "host" \
  "--init" \
  "--mount" \
  "type=bind,source=/etc/blackwell-serving/gateway/litellm.yaml,target=/etc/litellm/config.yaml,readonly" \
  "--mount" \
  "type=bind,source=/etc/blackwell-serving/gateway/bws_key_check.py,target=/etc/litellm/bws_key_check.py,readonly" \
  "--mount" \
  "type=bind,source=/etc/blackwell-serving/gateway.env,target=/run/secrets/blackwell-serving.env,readonly" \
  "--label" \
  "org.blackwell-serving.gateway-config=03941ba87ed4" \
  "-e" \
  "LITELLM_LOCAL_MODEL_COST_MAP" \
  "-e" \
  "LITELLM_TELEMETRY" \
  "blackwell-serving/gateway:c2860cdd73d4" \
  "/bin/sh" \
  "-c" \
  "while IFS= read -r kv; do export \"$$kv\"; done < /run/secrets/blackwell-serving.env && exec \"$$@\"" \
  "gateway" \
  "litellm" \
  "--config" \
  "/etc/litellm/config.yaml" \
  "--host" \
  "0.0.0.0" \
  "--port" \
  "4000" \
  "--num_workers" \
  "1"
ExecStop=/usr/bin/docker stop -t 30 "bws-gateway"
Restart=on-failure
RestartSec=10
TimeoutStartSec=infinity
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
BWS_UNIT_EOF
mv -f "$unit_path.tmp" "$unit_path"
systemctl daemon-reload
systemctl enable bws-gateway.service >/dev/null 2>&1
log "restarting (routes $(sha256sum "$config_path" | cut -c1-12))"
systemctl restart bws-gateway.service
sleep 2
if ! systemctl is-active --quiet bws-gateway.service; then
  log "did not stay up; last lines of its journal:"
  journalctl -u bws-gateway.service -n 30 --no-pager >&2 || true
  exit 1
fi
log "active"
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
retire_older_tags blackwell-serving/gateway:c2860cdd73d4
# This start's identity: the gateway's gate runs again after every restart done here.
echo "started=$(systemctl show -p InvocationID --value bws-gateway.service)"
