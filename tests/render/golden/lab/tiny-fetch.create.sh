#!/usr/bin/env bash
# Put the model in this node's cache at its pinned revision: downloaded from the hub, taken from
# a directory already on the node, or finished after an upload to the staging directory.
# Work happens in a staging directory, is hashed into a manifest, then renamed into place.
set -euo pipefail
log() { printf '[blackwell %s] %s\n' 'model tiny' "$*" >&2; }
final=/var/lib/blackwell-serving/models/blackwell-lab--tiny-llama--lab-v1
staging=/var/lib/blackwell-serving/models/.staging/blackwell-lab--tiny-llama--lab-v1
if [ -f "$final/.blackwell-manifest.sha256" ]; then
  log "already cached at $final"
  exit 0
fi
install -d -m 0755 "$(dirname "$final")" "$(dirname "$staging")"
if [ ! -d "$staging" ]; then
  log "the upload to $staging is missing"
  exit 1
fi
rm -rf "$staging/.cache"
log "hashing files for the manifest"
# Written beside the directory, not in it, so that the manifest never lists itself.
(cd "$staging" && find . -type f ! -name .blackwell-manifest.sha256 -print0 | sort -z \
   | xargs -0 -r sha256sum) > "$staging.manifest.tmp"
mv -f "$staging.manifest.tmp" "$staging/.blackwell-manifest.sha256"
rm -rf "$final"
mv "$staging" "$final"
log "cached at $final ($(du -sh "$final" | cut -f1))"
