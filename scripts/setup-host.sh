#!/usr/bin/env bash
# Install the Debian packages of scripts/host-packages.txt that this machine lacks (apt-get,
# as root); with --tests, those of scripts/test-packages.txt too (the test command's). Idempotent:
# with every package installed it only reads dpkg's database.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lists=("$repo/scripts/host-packages.txt")
case "${1:-}" in
  --tests) lists+=("$repo/scripts/test-packages.txt") ;;
  "") ;;
  *) echo "usage: bash scripts/setup-host.sh [--tests]" >&2; exit 2 ;;
esac
missing=()
while read -r package _; do
  dpkg-query -W -f '${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "${lists[@]}")
((${#missing[@]})) || exit 0
if ((EUID != 0)); then
  echo "[setup] missing Debian packages: ${missing[*]}" >&2
  echo "[setup] fix: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "[setup] installing Debian packages: ${missing[*]}" >&2
# Packages installed for a command alone, whose daemon must not run here: prometheus, for promtool
# and the tests' own Prometheus processes (tests/unit/monitoring); postgresql, for the lab's own cluster (tests/lab/postgres.sh)
# and the private clusters of the team-backend tests (tests/engine/pgcluster.py), never its main cluster. Before apt-get, the unit of each one missing is masked: systemd then
# starts it neither after the install nor at boot (the package lifts only a mask of its own). A
# host without a running systemd (a container) starts no service from a package's postinst:
# invoke-rc.d finds no runlevel. No policy-rc.d: one that allows the rest makes invoke-rc.d start
# them (docker.io's init script failed so in the bare-operator test's container).
command_only=(prometheus postgresql)
for package in "${command_only[@]}"; do
  if [[ " ${missing[*]} " == *" $package "* ]]; then
    mkdir -p /etc/systemd/system
    ln -sfn /dev/null "/etc/systemd/system/$package.service"
  fi
done
log=$(mktemp /tmp/bws-apt.XXXXXX)
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "[setup] apt-get failed (log above, kept in $log); fix: check this machine's Debian mirror, then run the command again" >&2
  exit 1
fi
rm -f "$log"
