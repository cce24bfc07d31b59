#!/usr/bin/env bash
# Install the Debian packages of scripts/host-packages.txt that this machine lacks (apt-get,
# as root). Idempotent: with every package installed it only reads dpkg's database.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
list="$repo/scripts/host-packages.txt"
missing=()
while read -r package _; do
  dpkg-query -W -f '${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list")
((${#missing[@]})) || exit 0
if ((EUID != 0)); then
  echo "[setup] missing Debian packages: ${missing[*]}" >&2
  echo "[setup] fix: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "[setup] installing Debian packages: ${missing[*]}" >&2
log=$(mktemp /tmp/bws-apt.XXXXXX)
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "[setup] apt-get failed (log above, kept in $log); fix: check this machine's Debian mirror, then run the command again" >&2
  exit 1
fi
rm -f "$log"
