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
# The whole suite: the lab's tests and the others side by side. The lab's tests wait on engines
# (starts, restarts, gates) most of their time: a third to half of the 2 cores stayed idle through
# them (vmstat, 2026-12-07), and the others (the engine's previews, renders, units: 13 minutes
# before them) need no lab. Each is its own pytest run with its own summary; the others' output
# is shown after the lab's; the command fails when either fails.
rest_log=$(mktemp "${TMPDIR:-/tmp}/blackwell-tests-beside-the-lab.XXXXXX")
echo "tests beside the lab's (every folder but tests/lab): output in $rest_log, shown at the end"
python -m pytest -q -rs --ignore=tests/lab >"$rest_log" 2>&1 &
rest=$!
trap 'kill "$rest" 2>/dev/null || true' EXIT
lab_status=0
python -m pytest -q -rs tests/lab || lab_status=$?
rest_status=0
wait "$rest" || rest_status=$?
trap - EXIT
echo
echo "== the tests beside the lab's (exit $rest_status)"
cat "$rest_log"
rm -f "$rest_log"
echo "lab tests: exit $lab_status; the others: exit $rest_status"
((lab_status == 0 && rest_status == 0))
