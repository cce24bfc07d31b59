#!/usr/bin/env bash
# Create .venv with the project's pinned dependencies (pyproject.toml). Idempotent: a second
# run with unchanged pins does nothing.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$repo/.venv"
stamp="$venv/.pins-$(sha256sum "$repo/pyproject.toml" | cut -c1-16)"
if [ -e "$stamp" ]; then
  exit 0
fi
echo "[setup] python environment in $venv" >&2
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# pip's build-backend chatter goes to a log; on failure it is shown.
log="$venv/setup.log"
if ! { "$venv/bin/pip" install --quiet --upgrade pip && "$venv/bin/pip" install --quiet -e "${repo}[test]"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "[setup] pip failed (log above, kept in $log)" >&2
  exit 1
fi
rm -f "$venv"/.pins-*
touch "$stamp"
