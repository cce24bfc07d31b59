#!/usr/bin/env bash
# Write Prometheus's configuration (what it scrapes) and the stack's rules beside it, checked by
# promtool before they are moved into place; and its data directory. Its unit (another step)
# names their digest, so a new configuration restarts it.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'prometheus config' "$*" >&2; bws_said+=("$*"); }
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
    journalctl) package=systemd ;;
    apt-get) package=apt ;;
    promtool) package=prometheus ;;
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
config_dir=/etc/blackwell-serving-prometheus
install -d -m 0755 "$config_dir"
install -d -m 0750 -o prometheus -g prometheus /var/lib/blackwell-serving/prometheus
work=$(mktemp -d "$config_dir/.new.XXXXXX")
trap 'rm -rf "$work"' EXIT
cat > "$work/prometheus.yml" <<'BWS_PROMETHEUS_CONFIG_EOF'
# Managed by blackwell-serving (Monitoring) for stack spark-duo: written by `pulumi up`, do not edit.
global:
  scrape_interval: 15s
  scrape_timeout: 10s
  evaluation_interval: 30s
rule_files:
- /etc/blackwell-serving-prometheus/rules.yml
scrape_configs:
- job_name: prometheus
  static_configs:
  - targets:
    - 127.0.0.1:9090
    labels:
      stack: spark-duo
      node: spark-1a32
- job_name: engine-qwen35
  authorization:
    type: Bearer
    credentials_file: /etc/blackwell-serving-prometheus/keys/engine-qwen35
  static_configs:
  - targets:
    - spark-1a32:8000
    labels:
      stack: spark-duo
      deployment: qwen35
      engine: vllm
      node: spark-1a32
      served_name: qwen3.5-122b
- job_name: gateway
  metrics_path: /metrics/
  authorization:
    type: Bearer
    credentials_file: /etc/blackwell-serving-prometheus/keys/gateway
  static_configs:
  - targets:
    - spark-1a32:4000
    labels:
      stack: spark-duo
      node: spark-1a32
- job_name: node
  static_configs:
  - targets:
    - spark-1a32:9100
    labels:
      stack: spark-duo
      node: spark-1a32
  - targets:
    - spark-5be3:9100
    labels:
      stack: spark-duo
      node: spark-5be3
BWS_PROMETHEUS_CONFIG_EOF
cat > "$work/rules.yml" <<'BWS_PROMETHEUS_RULES_EOF'
# Generated by python -m components.monitoring --stack spark-duo; do not edit.
groups:
- name: blackwell-serving/spark-duo/qwen35
  rules:
  - record: bws:decode_tokens_per_second
    expr: sum by (stack, deployment) (rate(vllm:generation_tokens_total{stack="spark-duo",deployment="qwen35"}[2m]))
    labels:
      stack: spark-duo
      deployment: qwen35
  - record: bws:progress_per_second
    expr: sum by (stack, deployment) (rate(vllm:prompt_tokens_total{stack="spark-duo",deployment="qwen35"}[2m])) + sum by (stack, deployment) (rate(vllm:generation_tokens_total{stack="spark-duo",deployment="qwen35"}[2m]))
    labels:
      stack: spark-duo
      deployment: qwen35
  - record: bws:ttft_seconds:p95
    expr: histogram_quantile(0.95, sum by (stack, deployment, le) (rate(vllm:time_to_first_token_seconds_bucket{stack="spark-duo",deployment="qwen35"}[5m])))
    labels:
      stack: spark-duo
      deployment: qwen35
  - record: bws:inter_token_latency_seconds:p95
    expr: histogram_quantile(0.95, sum by (stack, deployment, le) (rate(vllm:inter_token_latency_seconds_bucket{stack="spark-duo",deployment="qwen35"}[5m])))
    labels:
      stack: spark-duo
      deployment: qwen35
  - record: bws:requests_running
    expr: sum by (stack, deployment) (vllm:num_requests_running{stack="spark-duo",deployment="qwen35"})
    labels:
      stack: spark-duo
      deployment: qwen35
  - record: bws:requests_waiting
    expr: sum by (stack, deployment) (vllm:num_requests_waiting{stack="spark-duo",deployment="qwen35"})
    labels:
      stack: spark-duo
      deployment: qwen35
  - record: bws:kv_cache_usage_ratio
    expr: max by (stack, deployment) (vllm:kv_cache_usage_perc{stack="spark-duo",deployment="qwen35"})
    labels:
      stack: spark-duo
      deployment: qwen35
  - record: bws:preemptions_per_second
    expr: sum by (stack, deployment) (rate(vllm:num_preemptions_total{stack="spark-duo",deployment="qwen35"}[2m]))
    labels:
      stack: spark-duo
      deployment: qwen35
  - alert: BwsEngineDown
    expr: up{stack="spark-duo",deployment="qwen35"} == 0
    for: 5m
    labels:
      stack: spark-duo
      deployment: qwen35
      severity: critical
    annotations:
      summary: qwen35 (vllm on spark-1a32, port 8000) answered no scrape for 5m
      description: The engine is down, stopped, or still loading its weights. See journalctl -u bws-qwen35-watchdog.service on spark-1a32 and the engine's unit.
  - alert: BwsEngineWedged
    expr: bws:progress_per_second{stack="spark-duo",deployment="qwen35"} == 0 and bws:requests_running{stack="spark-duo",deployment="qwen35"} > 0
    for: 5m
    labels:
      stack: spark-duo
      deployment: qwen35
      severity: critical
    annotations:
      summary: qwen35 (vllm on spark-1a32) runs requests but makes no progress
      description: 'bws:progress_per_second was 0 over its 2m window and stayed so for 5m while requests ran: its process is alive and does no work. See journalctl -u bws-qwen35-watchdog.service on spark-1a32.'
  - alert: BwsRestartLoop
    expr: increase(bws_watchdog_restarts_total{stack="spark-duo",deployment="qwen35"}[99m]) >= 3
    labels:
      stack: spark-duo
      deployment: qwen35
      severity: critical
    annotations:
      summary: 'qwen35 (vllm on spark-1a32): 3 watchdog restarts in 99 minutes'
      description: Each restart wedged or failed again. See journalctl -u bws-qwen35-watchdog.service on spark-1a32.
- name: blackwell-serving/spark-duo/node/spark-1a32
  rules:
  - record: bws:node_mem_available_bytes
    expr: max by (stack, node) (node_memory_MemAvailable_bytes{stack="spark-duo",node="spark-1a32"})
    labels:
      stack: spark-duo
      node: spark-1a32
  - record: bws:node_mem_available_ratio
    expr: max by (stack, node) (node_memory_MemAvailable_bytes{stack="spark-duo",node="spark-1a32"}) / max by (stack, node) (node_memory_MemTotal_bytes{stack="spark-duo",node="spark-1a32"})
    labels:
      stack: spark-duo
      node: spark-1a32
  - record: bws:node_swap_used_bytes
    expr: max by (stack, node) (node_memory_SwapTotal_bytes{stack="spark-duo",node="spark-1a32"}) - max by (stack, node) (node_memory_SwapFree_bytes{stack="spark-duo",node="spark-1a32"})
    labels:
      stack: spark-duo
      node: spark-1a32
  - alert: BwsNodeMemoryPressure
    expr: bws:node_mem_available_ratio{stack="spark-duo",node="spark-1a32"} < 0.1
    for: 5m
    labels:
      stack: spark-duo
      node: spark-1a32
      severity: warning
    annotations:
      summary: 'spark-1a32 (gb10, unified memory): under 10% of its memory available'
      description: 'MemAvailable below 10% of MemTotal for 5m: the next allocation of an engine, or of anything else on spark-1a32, swaps or meets the OOM killer.'
- name: blackwell-serving/spark-duo/node/spark-5be3
  rules:
  - record: bws:node_mem_available_bytes
    expr: max by (stack, node) (node_memory_MemAvailable_bytes{stack="spark-duo",node="spark-5be3"})
    labels:
      stack: spark-duo
      node: spark-5be3
  - record: bws:node_mem_available_ratio
    expr: max by (stack, node) (node_memory_MemAvailable_bytes{stack="spark-duo",node="spark-5be3"}) / max by (stack, node) (node_memory_MemTotal_bytes{stack="spark-duo",node="spark-5be3"})
    labels:
      stack: spark-duo
      node: spark-5be3
  - record: bws:node_swap_used_bytes
    expr: max by (stack, node) (node_memory_SwapTotal_bytes{stack="spark-duo",node="spark-5be3"}) - max by (stack, node) (node_memory_SwapFree_bytes{stack="spark-duo",node="spark-5be3"})
    labels:
      stack: spark-duo
      node: spark-5be3
  - alert: BwsNodeMemoryPressure
    expr: bws:node_mem_available_ratio{stack="spark-duo",node="spark-5be3"} < 0.1
    for: 5m
    labels:
      stack: spark-duo
      node: spark-5be3
      severity: warning
    annotations:
      summary: 'spark-5be3 (gb10, unified memory): under 10% of its memory available'
      description: 'MemAvailable below 10% of MemTotal for 5m: the next allocation of an engine, or of anything else on spark-5be3, swaps or meets the OOM killer.'
BWS_PROMETHEUS_RULES_EOF
# The config names the rules at their final path: check a copy that names the new one.
rules_file=/etc/blackwell-serving-prometheus/rules.yml
sed "s#$rules_file#$work/rules.yml#" "$work/prometheus.yml" > "$work/check.yml"
if ! promtool check config "$work/check.yml" >&2; then
  log "promtool refused the configuration"
  exit 1
fi
chmod 0644 "$work/prometheus.yml" "$work/rules.yml"
mv -f "$work/rules.yml" "$rules_file"
mv -f "$work/prometheus.yml" /etc/blackwell-serving-prometheus/prometheus.yml
log "written ($(sha256sum /etc/blackwell-serving-prometheus/prometheus.yml | cut -c1-12))"
