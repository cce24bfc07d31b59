#!/usr/bin/env bash
# Put the model in this node's cache at its pinned revision: downloaded from the hub, taken from
# a directory already on the node, or finished after an upload to the staging directory.
# Work happens in a staging directory, is hashed into a manifest, then renamed into place. An
# upload (the step before this one sent the operator's directory to the staging directory) is
# installed even over a cached copy: its content changed, or the cache drifted.
set -euo pipefail
bws_said=()
log() { printf '[blackwell %s] %s\n' 'model qwen35-122b' "$*" >&2; bws_said+=("$*"); }
progress_log=/var/log/blackwell-serving/model-qwen35-122b.log
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
    docker) package=docker.io ;;
    awk) package=mawk ;;
    python3) package=python3 ;;
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
cache_stat() {
  (cd "$1" && find . -type f ! -name '.blackwell-*' -printf '%s %T@ %P\n' \
     | awk '{ $2 = int($2); print }' | LC_ALL=C sort)
}
cache_intact() {
  [ -f "$1/.blackwell-manifest.sha256" ] && [ -f "$1/.blackwell-manifest.stat" ] \
    && cache_stat "$1" | cmp -s - "$1/.blackwell-manifest.stat"
}
placed() {
  printf 'placed=%s\n' "$(stat -c %i "$1")"
}
final=/var/lib/blackwell-serving/models/Qwen--Qwen3.5-122B-A10B-FP8--0000000000000000000000000000000000000000
staging=/var/lib/blackwell-serving/models/.staging/Qwen--Qwen3.5-122B-A10B-FP8--0000000000000000000000000000000000000000
# A cache installed before fingerprints were recorded: verified in full once, then fingerprinted.
if [ -f "$final/.blackwell-manifest.sha256" ] && [ ! -f "$final/.blackwell-manifest.stat" ] \
   && (cd "$final" && sha256sum -c --quiet .blackwell-manifest.sha256); then
  cache_stat "$final" > "$final/.blackwell-manifest.stat"
fi
if cache_intact "$final"; then
  log "already cached at $final"
  placed "$final"
  exit 0
fi
install -d -m 0755 "$(dirname "$final")" "$(dirname "$staging")"
mkdir -p "$staging"
# The download runs in a container of its own name: removed however this script ends (a step's
# timeout ends the script, and docker's client with it, but not the container).
downloader=bws-download-qwen35-122b
token_file=""
trap 'docker rm -f "$downloader" >/dev/null 2>&1 || true; [ -z "$token_file" ] || rm -f "$token_file"' EXIT
docker rm -f "$downloader" >/dev/null 2>&1 || true
token_file=$(mktemp)
chmod 0600 "$token_file"
# The token arrives on stdin, never in argv; the container reads it from a mounted file
# (HF_TOKEN_PATH), so `docker inspect` shows a path, not the token.
cat > "$token_file"
log downloading Qwen/Qwen3.5-122B-A10B-FP8@0000000000000000000000000000000000000000
docker run --rm --name "$downloader" --network host -v "$staging":/dest \
-v "$token_file":/run/secrets/hf_token:ro -e HF_TOKEN_PATH=/run/secrets/hf_token \
  --entrypoint python3 hellohal2064/vllm-qwen3.5-gb10:latest -c \
  'import sys; from huggingface_hub import snapshot_download; snapshot_download(sys.argv[1], revision=sys.argv[2], local_dir="/dest")' \
  Qwen/Qwen3.5-122B-A10B-FP8 0000000000000000000000000000000000000000 2>&1 | progress
rm -rf "$staging/.cache"
log "hashing files for the manifest"
# Written beside the directory, not in it, so that the manifest never lists itself.
(cd "$staging" && find . -type f ! -name '.blackwell-*' -print0 | LC_ALL=C sort -z \
   | xargs -0 -r sha256sum) > "$staging.manifest.tmp"
mv -f "$staging.manifest.tmp" "$staging/.blackwell-manifest.sha256"
cache_stat "$staging" > "$staging.stat.tmp"
mv -f "$staging.stat.tmp" "$staging/.blackwell-manifest.stat"
rm -rf "$final"
mv "$staging" "$final"
log "cached at $final ($(du -sh "$final" | cut -f1))"
placed "$final"
