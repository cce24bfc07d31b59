#!/usr/bin/env bash
# Build the engine's venv on this node from its pinned recipe (components/venv.py), verify it, and
# only then make it the one in use. ROOT/IMAGE/<digest> is named by the recipe's content: a venv
# built and marked (.bws-built) is never built again; one left half-built by an interrupted run is
# started over. `current` is switched by a rename once the venv is verified, so a running unit
# keeps its venv until its own step restarts it; `previous` names the one before (a rollback by
# hand: rename it over `current`, restart the unit). Older venvs of this entry are removed.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'venv sglang-main' "$*" >&2; bws_said+=("$*"); }
progress_log=/var/log/blackwell-serving/venv-sglang-main.log
progress() {
  mkdir -p "$(dirname "$progress_log")"
  if [ -z "${progress_told:-}" ]; then
    progress_told=1
    log "full output in $progress_log"
  fi
  tee -a "$progress_log" | awk -v shown=-1 -v RS='[\r\n]+' '
    /^\[blackwell / { print; fflush(); next }
    match($0, /[0-9]+(\.[0-9]+)?%/) {
      p = substr($0, RSTART, RLENGTH - 1) + 0
      if (p <= 100 && int(p / 10) > shown) { shown = int(p / 10); print; fflush() }
      next
    }
    /^(Loaded image|#[0-9]+ \[|Step [0-9]+\/[0-9]+|Successfully (built|tagged))/ { print; fflush() }
  ' >&2
}
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
    awk) package=mawk ;;
    python3) package=python3 ;;
    git) package=git ;;
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
root=/opt/blackwell-serving/venvs/sglang-main
digest=51918b1e6771
dir="$root/$digest"
kept="$dir/.bws-kept.txt"
# The installer's cache beside the venvs (uv links the venv's files from it): destroy removes it too.
export UV_CACHE_DIR="$root/.cache/uv" PIP_CACHE_DIR="$root/.cache/pip"
python=/usr/bin/python3
install_into() {
  uv pip install --python "$dir/bin/python3" "$@" 2>&1 | progress
}
# The verify program (templates/scripts/verify_venv.py with engine_flags.py) follows this script on stdin.
verify_py=$(cat)
commit=not_set
if [ "$commit" = not_set ]; then
  log "the source's commit is not set; fix: pulumi config set" blackwell-serving:sglang_main_commit "<40-hex commit>"
  exit 1
fi
if [ -f "$dir/.bws-built" ]; then
  log "venv $digest already built"
else
  [ -x "$python" ] || { log "no python at $python on this node; fix: install it, or set venv.python"; exit 1; }
  command -v uv >/dev/null || { log "uv is not on this node's PATH; fix: install uv (https://docs.astral.sh/uv/), or set venv.installer: pip"; exit 1; }
  command -v git >/dev/null || { log "git is not installed on this node; fix: apt-get install git"; exit 1; }
  rm -rf "$dir"
  install -d -m 0755 "$root"
  log "creating the venv with $python"
  uv venv --python "$python" --system-site-packages "$dir" 2>&1 | progress
  # What the node provides: present, and pinned at its version for every install below.
  "$dir/bin/python3" -c '
import sys
from importlib import metadata
for name in sys.argv[1:]:
    try:
        print(f"{name}=={metadata.version(name)}")
    except metadata.PackageNotFoundError:
        sys.exit(f"[blackwell] no_deps_over: {name} is not installed for " + sys.base_prefix
                 + "; fix: install it there (e.g. the CUDA 13 torch) or remove it from no_deps_over")
' torch > "$kept"
  [ ! -s "$kept" ] || log "kept from the node: $(tr '\n' ' ' < "$kept")"
  src="$dir/src"
  log "fetching" https://github.com/sgl-project/sglang.git "at $commit"
  git init -q "$src"
  git -C "$src" remote add origin https://github.com/sgl-project/sglang.git
  if ! git -C "$src" fetch --depth 1 origin "$commit" 2>&1 | progress; then
    log "the server gives no single commit; fetching the whole history"
    git -C "$src" fetch origin 2>&1 | progress
  fi
  git -C "$src" checkout -q --detach "$commit"
  [ "$(git -C "$src" rev-parse HEAD)" = "$commit" ] || { log "the checkout is not at the pinned commit"; exit 1; }
  log "installing the engine from source (--no-deps: the node provides its dependencies)"
  install_into --no-deps -c "$kept" -e "$src"/python
  printf '%s\n' '{"installer": "uv", "no_deps_over": ["torch"], "patches": {}, "python": "/usr/bin/python3", "requirements": [], "source": {"commit": "not_set", "extras": [], "git": "https://github.com/sgl-project/sglang.git", "subdirectory": "python"}, "wheels": []}' > "$dir/.bws-recipe.json"
  touch "$dir/.bws-built"
  log "built venv $digest"
fi
# Verified on every run (a new flag in the stack is checked against the engine already built).
log "verifying" sglang "(import, version, the kept packages, and its own parser on our command lines)"
if ! "$dir/bin/python3" -c "$verify_py" sglang "$kept" '[["python3", "-m", "sglang.launch_server", "--model-path", "/model", "--served-model-name", "qwen3.5-397b", "--host", "0.0.0.0", "--port", "30000", "--tp", "4", "--mem-fraction-static", "0.85", "--context-length", "262144", "--kv-cache-dtype", "auto", "--quantization", "modelopt_fp4", "--moe-runner-backend", "flashinfer_cutlass", "--fp4-gemm-backend", "flashinfer_cudnn", "--tool-call-parser", "qwen3_coder", "--reasoning-parser", "qwen3", "--enable-hierarchical-cache", "--hicache-ratio", "4.0", "--enable-metrics"]]' >&2; then
  log "the venv does not serve as configured (above); still in use: $(readlink "$root/current" 2>/dev/null || echo none)"
  exit 1
fi
old=$(readlink "$root/current" 2>/dev/null || true)
if [ "$old" != "$digest" ]; then
  if [ -n "$old" ]; then
    ln -sfn "$old" "$root/.previous.tmp"
    mv -T "$root/.previous.tmp" "$root/previous"
  fi
  ln -sfn "$digest" "$root/.current.tmp"
  mv -T "$root/.current.tmp" "$root/current"
  log "current is now $digest${old:+ (previous: $old)}"
fi
previous=$(readlink "$root/previous" 2>/dev/null || true)
for d in "$root"/*/; do
  d=${d%/}
  case "${d##*/}" in current|previous|"$digest"|"$previous") continue ;; esac
  rm -rf "$d"
  log "removed old venv ${d##*/}"
done
echo "venv-id=$digest"
