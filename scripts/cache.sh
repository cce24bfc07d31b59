# shellcheck shell=bash
# The one cache root of everything this repository downloads or builds outside the clone:
# BLACKWELL_CACHE (default /var/cache/blackwell-serving). Point it at an empty directory and the
# next run is a cold one: Go module and build caches (go/), pip's cache (pip/), the lab's
# rootfs, wheels, sdists, registry and images (lab/), and the lab's Docker daemon's data root
# (docker/, when the lab starts that daemon: tests/lab/host-docker.sh). Sourced, prints nothing.
export BLACKWELL_CACHE="${BLACKWELL_CACHE:-/var/cache/blackwell-serving}"
export PIP_CACHE_DIR="$BLACKWELL_CACHE/pip"
