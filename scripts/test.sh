#!/usr/bin/env bash
# The test command: unit and render tests, previews on the real engine, and the lab's
# end-to-end tests. It installs what they run and starts the lab first (tests/lab/lab up,
# idempotent); with arguments, pytest runs those (the lab is started only when they name
# tests/lab). Every skip is reported with its reason (-rs).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
bash scripts/setup-host.sh --tests
bash scripts/install-engine.sh
bash scripts/setup-python.sh
if (($# == 0)) || [[ " $* " == *tests/lab* ]]; then
  tests/lab/lab up
fi
# shellcheck source=scripts/env.sh
source scripts/env.sh
if (($# > 0)); then
  exec python -m pytest -q -rs "$@"
fi
# The whole suite, in two runs side by side (each its own pytest run and summary; the command
# fails when either fails). The lab's tests wait on engines (starts, restarts, gates) most of
# their time: a third to half of the 2 cores stayed idle through them (vmstat, 2026-12-07).
#   in front:  the lab's tests on its pair 1, where the operator's `lab` stack lives (converged,
#              then the destroy that gives the nodes back: tests/lab/conftest.py), then every
#              other folder (the engine's previews, renders, units: no lab);
#   beside:    the lab's clean phase (stacks of their own, none of the `lab` stack) on pair 2,
#              nodes 3 and 4.
# So the two halves end together: in the cold run of 2026-12-07 19:08 the front's lab tests took
# 22 m 22 s, the other folders 4 m 44 s, the clean phase 24 m 09 s.
# A lab of one pair (`tests/lab/lab up --nodes 2`) runs every lab phase in front, the other
# folders beside.
pairs=$(python -c 'from tests.lab import topology as t; print(t.node_count() // t.PAIR_SIZE)')
beside_log=$(mktemp "${TMPDIR:-/tmp}/blackwell-tests-beside.XXXXXX")
if ((pairs >= 2)); then
  what_beside="the clean phase of the lab tests on pair 2"
else
  what_beside="every folder but tests/lab"
fi
echo "beside the lab tests on pair 1: $what_beside; output in $beside_log, shown at the end"
(
  if ((pairs >= 2)); then
    BWS_LAB_PAIR=2 BWS_LAB_PHASES=clean exec python -m pytest -q -rs -p no:cacheprovider tests/lab
  fi
  exec python -m pytest -q -rs -p no:cacheprovider --ignore=tests/lab
) >"$beside_log" 2>&1 &
beside=$!
trap 'kill "$beside" 2>/dev/null || true' EXIT
front_status=0
if ((pairs >= 2)); then
  BWS_LAB_PHASES=converged,gives-back python -m pytest -q -rs tests/lab || front_status=$?
  echo "== every folder but tests/lab"
  python -m pytest -q -rs --ignore=tests/lab || front_status=1
else
  python -m pytest -q -rs tests/lab || front_status=$?
fi
beside_status=0
wait "$beside" || beside_status=$?
trap - EXIT
echo
echo "== the tests beside the lab tests on pair 1 (exit $beside_status)"
cat "$beside_log"
rm -f "$beside_log"
echo "in front (the lab tests on pair 1, then the other folders): exit $front_status; beside them: exit $beside_status"
((front_status == 0 && beside_status == 0))
