#!/usr/bin/env bash
# The test command: unit and render tests, previews on the real engine, and — when the lab is
# up (scripts/run-lab.sh or tests/lab/lab up) — the lab's end-to-end tests.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
bash scripts/install-engine.sh
bash scripts/setup-python.sh
# shellcheck source=scripts/env.sh
source scripts/env.sh
exec python -m pytest -q "$@"
