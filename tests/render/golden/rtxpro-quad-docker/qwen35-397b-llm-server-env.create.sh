#!/usr/bin/env bash
# Write the root-only EnvironmentFile of a unit we own from stdin (its secrets: API key, tokens),
# atomically, mode 0600; the unit's own install step is another step, so that hiding the secrets
# never hides the unit's text in a preview (components/unit.py).
# Prints `generation=<token>`: a random token drawn each time the file's content changes (kept
# beside it, not secret, no function of the content). The unit's install step takes it as a
# trigger, so a new secret restarts the unit, and an unchanged one (a re-run after an upgrade
# of this script) keeps the token and restarts nothing.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'env bws-qwen35-397b.service' "$*" >&2; }
env_path=/etc/blackwell-serving/qwen35-397b.env
generation_path="$env_path.generation"
install -d -m 0700 "$(dirname "$env_path")"
umask 077
cat > "$env_path.tmp"
chmod 0600 "$env_path.tmp"
if [ -f "$env_path" ] && cmp -s "$env_path.tmp" "$env_path"; then
  rm -f "$env_path.tmp"
  log "unchanged"
else
  mv -f "$env_path.tmp" "$env_path"
  rm -f "$generation_path"
  log "written"
fi
if [ ! -s "$generation_path" ]; then
  # First write, a change, or a file written by an earlier version (which restarted its unit
  # with it): a new token. The install step compares it with the one its unit started with.
  cat /proc/sys/kernel/random/uuid > "$generation_path.tmp"
  mv -f "$generation_path.tmp" "$generation_path"
fi
echo "generation=$(cat "$generation_path")"
