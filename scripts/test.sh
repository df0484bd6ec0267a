#!/usr/bin/env bash
# The README's test command: sets up .venv (idempotent), then runs ruff, mypy and the whole pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]' 2>&1 | grep -v '^WARNING: Location' || true
.venv/bin/python -c 'import hindsight_batch, duckdb, ijson, pytest' >/dev/null
echo "== ruff"
.venv/bin/ruff check hindsight_batch tests scripts
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
.venv/bin/python -m pytest -q "$@"
