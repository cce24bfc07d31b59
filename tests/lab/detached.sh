# shellcheck shell=bash
# Sourced by the lab scripts that start daemons (lib.sh, engine/prepare.sh).

# Start a daemon in its own session with no descriptor of ours but stdin/stdout/stderr: a lock
# the caller holds (`flock FILE tests/lab/lab up`, on whatever fd flock chose) must end with the
# caller, not live on in dockerd and block every later holder. $! is the daemon's pid.
detached() {
  (
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec setsid "$@"
  ) &
}
