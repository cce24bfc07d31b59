#!/usr/bin/env bash
# Create .venv with the project's pinned dependencies (pyproject.toml). Idempotent: a second
# run with unchanged pins does nothing.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$repo/.venv"
# pip itself is pinned too: the lab's downloads run from this venv (tests/lab/engine/prepare.sh).
PIP_VERSION=26.3
# shellcheck source=scripts/cache.sh
. "$repo/scripts/cache.sh"
stamp="$venv/.pins-$( (cat "$repo/pyproject.toml"; echo "pip==$PIP_VERSION") | sha256sum | cut -c1-16)"
if [ -e "$stamp" ]; then
  exit 0
fi
echo "[setup] python environment in $venv" >&2
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# pip's build-backend chatter goes to a log; on failure it is shown.
log="$venv/setup.log"
if ! { "$venv/bin/pip" install --quiet "pip==$PIP_VERSION" && "$venv/bin/pip" install --quiet -e "${repo}[test]"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "[setup] pip failed (log above, kept in $log)" >&2
  exit 1
fi
rm -f "$venv"/.pins-*
touch "$stamp"
