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
#              then the destroy that gives the nodes back: tests/lab/conftest.py);
#   beside:    every other folder (the engine's previews, renders, units: no lab), then the lab's
#              clean phase (stacks of their own, none of the `lab` stack) on pair 2, nodes 3 and 4.
# A lab of one pair (`tests/lab/lab up --nodes 2`) runs every lab phase in front.
pairs=$(python -c 'from tests.lab import topology as t; print(t.node_count() // t.PAIR_SIZE)')
beside_log=$(mktemp "${TMPDIR:-/tmp}/blackwell-tests-beside.XXXXXX")
what_beside="every folder but tests/lab"
if ((pairs >= 2)); then what_beside+=", then the clean phase of the lab tests on pair 2"; fi
echo "beside the lab tests on pair 1: $what_beside; output in $beside_log, shown at the end"
(
  status=0
  python -m pytest -q -rs -p no:cacheprovider --ignore=tests/lab || status=1
  if ((pairs >= 2)); then
    echo "== the clean phase of the lab tests, on pair 2"
    BWS_LAB_PAIR=2 BWS_LAB_PHASES=clean python -m pytest -q -rs -p no:cacheprovider tests/lab || status=1
  fi
  exit "$status"
) >"$beside_log" 2>&1 &
beside=$!
trap 'kill "$beside" 2>/dev/null || true' EXIT
front_status=0
if ((pairs >= 2)); then
  BWS_LAB_PHASES=converged,gives-back python -m pytest -q -rs tests/lab || front_status=$?
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
echo "lab tests on pair 1: exit $front_status; beside them: exit $beside_status"
((front_status == 0 && beside_status == 0))
