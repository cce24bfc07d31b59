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
# Managed by blackwell-serving (Monitoring) for stack lab: written by `pulumi up`, do not edit.
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
      stack: lab
      node: lab-1
- job_name: engine-tiny
  authorization:
    type: Bearer
    credentials_file: /etc/blackwell-serving-prometheus/keys/engine-tiny
  static_configs:
  - targets:
    - 198.18.0.11:8000
    labels:
      stack: lab
      deployment: tiny
      engine: vllm
      node: lab-1
      served_name: tiny-llama
- job_name: engine-tiny-b
  authorization:
    type: Bearer
    credentials_file: /etc/blackwell-serving-prometheus/keys/engine-tiny-b
  static_configs:
  - targets:
    - 198.18.0.12:8002
    labels:
      stack: lab
      deployment: tiny-b
      engine: vllm
      node: lab-2
      served_name: tiny-llama-b
- job_name: engine-tiny-gguf
  authorization:
    type: Bearer
    credentials_file: /etc/blackwell-serving-prometheus/keys/engine-tiny-gguf
  static_configs:
  - targets:
    - 198.18.0.11:8003
    labels:
      stack: lab
      deployment: tiny-gguf
      engine: llamacpp
      node: lab-1
      served_name: tiny-llama-gguf
- job_name: gateway
  metrics_path: /metrics/
  authorization:
    type: Bearer
    credentials_file: /etc/blackwell-serving-prometheus/keys/gateway
  static_configs:
  - targets:
    - 198.18.0.11:4000
    labels:
      stack: lab
      node: lab-1
- job_name: node
  static_configs:
  - targets:
    - 198.18.0.11:9100
    labels:
      stack: lab
      node: lab-1
  - targets:
    - 198.18.0.12:9100
    labels:
      stack: lab
      node: lab-2
BWS_PROMETHEUS_CONFIG_EOF
cat > "$work/rules.yml" <<'BWS_PROMETHEUS_RULES_EOF'
# Generated by python -m components.monitoring --stack lab; do not edit.
groups:
- name: blackwell-serving/lab/tiny
  rules:
  - record: bws:decode_tokens_per_second
    expr: sum by (stack, deployment) (rate(vllm:generation_tokens_total{stack="lab",deployment="tiny"}[2m]))
    labels:
      stack: lab
      deployment: tiny
  - record: bws:progress_per_second
    expr: sum by (stack, deployment) (rate(vllm:prompt_tokens_total{stack="lab",deployment="tiny"}[2m])) + sum by (stack, deployment) (rate(vllm:generation_tokens_total{stack="lab",deployment="tiny"}[2m]))
    labels:
      stack: lab
      deployment: tiny
  - record: bws:ttft_seconds:p95
    expr: histogram_quantile(0.95, sum by (stack, deployment, le) (rate(vllm:time_to_first_token_seconds_bucket{stack="lab",deployment="tiny"}[5m])))
    labels:
      stack: lab
      deployment: tiny
  - record: bws:inter_token_latency_seconds:p95
    expr: histogram_quantile(0.95, sum by (stack, deployment, le) (rate(vllm:inter_token_latency_seconds_bucket{stack="lab",deployment="tiny"}[5m])))
    labels:
      stack: lab
      deployment: tiny
  - record: bws:requests_running
    expr: sum by (stack, deployment) (vllm:num_requests_running{stack="lab",deployment="tiny"})
    labels:
      stack: lab
      deployment: tiny
  - record: bws:requests_waiting
    expr: sum by (stack, deployment) (vllm:num_requests_waiting{stack="lab",deployment="tiny"})
    labels:
      stack: lab
      deployment: tiny
  - record: bws:kv_cache_usage_ratio
    expr: max by (stack, deployment) (vllm:kv_cache_usage_perc{stack="lab",deployment="tiny"})
    labels:
      stack: lab
      deployment: tiny
  - record: bws:preemptions_per_second
    expr: sum by (stack, deployment) (rate(vllm:num_preemptions_total{stack="lab",deployment="tiny"}[2m]))
    labels:
      stack: lab
      deployment: tiny
  - alert: BwsEngineDown
    expr: up{stack="lab",deployment="tiny"} == 0
    for: 5m
    labels:
      stack: lab
      deployment: tiny
      severity: critical
    annotations:
      summary: tiny (vllm on lab-1, port 8000) answered no scrape for 5m
      description: The engine is down, stopped, or still loading its weights. See journalctl -u bws-tiny-watchdog.service on lab-1 and the engine's unit.
  - alert: BwsEngineWedged
    expr: bws:progress_per_second{stack="lab",deployment="tiny"} == 0 and bws:requests_running{stack="lab",deployment="tiny"} > 0
    for: 5m
    labels:
      stack: lab
      deployment: tiny
      severity: critical
    annotations:
      summary: tiny (vllm on lab-1) runs requests but makes no progress
      description: 'bws:progress_per_second was 0 over its 2m window and stayed so for 5m while requests ran: its process is alive and does no work. See journalctl -u bws-tiny-watchdog.service on lab-1.'
  - alert: BwsRestartLoop
    expr: increase(bws_watchdog_restarts_total{stack="lab",deployment="tiny"}[47m]) >= 3
    labels:
      stack: lab
      deployment: tiny
      severity: critical
    annotations:
      summary: 'tiny (vllm on lab-1): 3 watchdog restarts in 47 minutes'
      description: Each restart wedged or failed again. See journalctl -u bws-tiny-watchdog.service on lab-1.
- name: blackwell-serving/lab/tiny-b
  rules:
  - record: bws:decode_tokens_per_second
    expr: sum by (stack, deployment) (rate(vllm:generation_tokens_total{stack="lab",deployment="tiny-b"}[2m]))
    labels:
      stack: lab
      deployment: tiny-b
  - record: bws:progress_per_second
    expr: sum by (stack, deployment) (rate(vllm:prompt_tokens_total{stack="lab",deployment="tiny-b"}[2m])) + sum by (stack, deployment) (rate(vllm:generation_tokens_total{stack="lab",deployment="tiny-b"}[2m]))
    labels:
      stack: lab
      deployment: tiny-b
  - record: bws:ttft_seconds:p95
    expr: histogram_quantile(0.95, sum by (stack, deployment, le) (rate(vllm:time_to_first_token_seconds_bucket{stack="lab",deployment="tiny-b"}[5m])))
    labels:
      stack: lab
      deployment: tiny-b
  - record: bws:inter_token_latency_seconds:p95
    expr: histogram_quantile(0.95, sum by (stack, deployment, le) (rate(vllm:inter_token_latency_seconds_bucket{stack="lab",deployment="tiny-b"}[5m])))
    labels:
      stack: lab
      deployment: tiny-b
  - record: bws:requests_running
    expr: sum by (stack, deployment) (vllm:num_requests_running{stack="lab",deployment="tiny-b"})
    labels:
      stack: lab
      deployment: tiny-b
  - record: bws:requests_waiting
    expr: sum by (stack, deployment) (vllm:num_requests_waiting{stack="lab",deployment="tiny-b"})
    labels:
      stack: lab
      deployment: tiny-b
  - record: bws:kv_cache_usage_ratio
    expr: max by (stack, deployment) (vllm:kv_cache_usage_perc{stack="lab",deployment="tiny-b"})
    labels:
      stack: lab
      deployment: tiny-b
  - record: bws:preemptions_per_second
    expr: sum by (stack, deployment) (rate(vllm:num_preemptions_total{stack="lab",deployment="tiny-b"}[2m]))
    labels:
      stack: lab
      deployment: tiny-b
  - alert: BwsEngineDown
    expr: up{stack="lab",deployment="tiny-b"} == 0
    for: 5m
    labels:
      stack: lab
      deployment: tiny-b
      severity: critical
    annotations:
      summary: tiny-b (vllm on lab-2, port 8002) answered no scrape for 5m
      description: The engine is down, stopped, or still loading its weights. See journalctl -u bws-tiny-b-watchdog.service on lab-2 and the engine's unit.
  - alert: BwsEngineWedged
    expr: bws:progress_per_second{stack="lab",deployment="tiny-b"} == 0 and bws:requests_running{stack="lab",deployment="tiny-b"} > 0
    for: 5m
    labels:
      stack: lab
      deployment: tiny-b
      severity: critical
    annotations:
      summary: tiny-b (vllm on lab-2) runs requests but makes no progress
      description: 'bws:progress_per_second was 0 over its 2m window and stayed so for 5m while requests ran: its process is alive and does no work. See journalctl -u bws-tiny-b-watchdog.service on lab-2.'
  - alert: BwsRestartLoop
    expr: increase(bws_watchdog_restarts_total{stack="lab",deployment="tiny-b"}[54m]) >= 3
    labels:
      stack: lab
      deployment: tiny-b
      severity: critical
    annotations:
      summary: 'tiny-b (vllm on lab-2): 3 watchdog restarts in 54 minutes'
      description: Each restart wedged or failed again. See journalctl -u bws-tiny-b-watchdog.service on lab-2.
- name: blackwell-serving/lab/tiny-gguf
  rules:
  - record: bws:decode_tokens_per_second
    expr: sum by (stack, deployment) (rate(llamacpp:tokens_predicted_total{stack="lab",deployment="tiny-gguf"}[2m]))
    labels:
      stack: lab
      deployment: tiny-gguf
  - record: bws:progress_per_second
    expr: sum by (stack, deployment) (rate(llamacpp:n_decode_total{stack="lab",deployment="tiny-gguf"}[2m]))
    labels:
      stack: lab
      deployment: tiny-gguf
  - record: bws:requests_running
    expr: sum by (stack, deployment) (llamacpp:requests_processing{stack="lab",deployment="tiny-gguf"})
    labels:
      stack: lab
      deployment: tiny-gguf
  - record: bws:requests_waiting
    expr: sum by (stack, deployment) (llamacpp:requests_deferred{stack="lab",deployment="tiny-gguf"})
    labels:
      stack: lab
      deployment: tiny-gguf
  - alert: BwsEngineDown
    expr: up{stack="lab",deployment="tiny-gguf"} == 0
    for: 5m
    labels:
      stack: lab
      deployment: tiny-gguf
      severity: critical
    annotations:
      summary: tiny-gguf (llamacpp on lab-1, port 8003) answered no scrape for 5m
      description: The engine is down, stopped, or still loading its weights. See journalctl -u bws-tiny-gguf-watchdog.service on lab-1 and the engine's unit.
  - alert: BwsEngineWedged
    expr: bws:progress_per_second{stack="lab",deployment="tiny-gguf"} == 0 and bws:requests_running{stack="lab",deployment="tiny-gguf"} > 0
    for: 5m
    labels:
      stack: lab
      deployment: tiny-gguf
      severity: critical
    annotations:
      summary: tiny-gguf (llamacpp on lab-1) runs requests but makes no progress
      description: 'bws:progress_per_second was 0 over its 2m window and stayed so for 5m while requests ran: its process is alive and does no work. See journalctl -u bws-tiny-gguf-watchdog.service on lab-1.'
  - alert: BwsRestartLoop
    expr: increase(bws_watchdog_restarts_total{stack="lab",deployment="tiny-gguf"}[92m]) >= 3
    labels:
      stack: lab
      deployment: tiny-gguf
      severity: critical
    annotations:
      summary: 'tiny-gguf (llamacpp on lab-1): 3 watchdog restarts in 92 minutes'
      description: Each restart wedged or failed again. See journalctl -u bws-tiny-gguf-watchdog.service on lab-1.
- name: blackwell-serving/lab/node/lab-1
  rules:
  - record: bws:node_mem_available_bytes
    expr: max by (stack, node) (node_memory_MemAvailable_bytes{stack="lab",node="lab-1"})
    labels:
      stack: lab
      node: lab-1
  - record: bws:node_mem_available_ratio
    expr: max by (stack, node) (node_memory_MemAvailable_bytes{stack="lab",node="lab-1"}) / max by (stack, node) (node_memory_MemTotal_bytes{stack="lab",node="lab-1"})
    labels:
      stack: lab
      node: lab-1
  - record: bws:node_swap_used_bytes
    expr: max by (stack, node) (node_memory_SwapTotal_bytes{stack="lab",node="lab-1"}) - max by (stack, node) (node_memory_SwapFree_bytes{stack="lab",node="lab-1"})
    labels:
      stack: lab
      node: lab-1
  - alert: BwsNodeMemoryPressure
    expr: bws:node_mem_available_ratio{stack="lab",node="lab-1"} < 0.1
    for: 5m
    labels:
      stack: lab
      node: lab-1
      severity: warning
    annotations:
      summary: 'lab-1 (cpu, unified memory): under 10% of its memory available'
      description: 'MemAvailable below 10% of MemTotal for 5m: the next allocation of an engine, or of anything else on lab-1, swaps or meets the OOM killer.'
- name: blackwell-serving/lab/node/lab-2
  rules:
  - record: bws:node_mem_available_bytes
    expr: max by (stack, node) (node_memory_MemAvailable_bytes{stack="lab",node="lab-2"})
    labels:
      stack: lab
      node: lab-2
  - record: bws:node_mem_available_ratio
    expr: max by (stack, node) (node_memory_MemAvailable_bytes{stack="lab",node="lab-2"}) / max by (stack, node) (node_memory_MemTotal_bytes{stack="lab",node="lab-2"})
    labels:
      stack: lab
      node: lab-2
  - record: bws:node_swap_used_bytes
    expr: max by (stack, node) (node_memory_SwapTotal_bytes{stack="lab",node="lab-2"}) - max by (stack, node) (node_memory_SwapFree_bytes{stack="lab",node="lab-2"})
    labels:
      stack: lab
      node: lab-2
  - alert: BwsNodeMemoryPressure
    expr: bws:node_mem_available_ratio{stack="lab",node="lab-2"} < 0.1
    for: 5m
    labels:
      stack: lab
      node: lab-2
      severity: warning
    annotations:
      summary: 'lab-2 (cpu, unified memory): under 10% of its memory available'
      description: 'MemAvailable below 10% of MemTotal for 5m: the next allocation of an engine, or of anything else on lab-2, swaps or meets the OOM killer.'
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
