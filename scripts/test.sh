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
exec python -m pytest -q -rs "$@"
