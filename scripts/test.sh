#!/usr/bin/env bash
# The README's test command: sets up .venv (idempotent), then runs ruff, mypy and the whole pytest suite twice:
# on the pure-Python package, then with the hot modules compiled by mypyc (scripts/compile.sh), as a compiled
# install (HINDSIGHT_BATCH_COMPILE=1) runs them. Compiled code checks types at run time: the second pass proves
# that every test's input gets through it the same way.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]' 2>&1 | grep -v '^WARNING: Location' || true
.venv/bin/python -c 'import hindsight_batch, duckdb, ijson, pytest' >/dev/null
scripts/compile.sh --clean >/dev/null  # a build left by an interrupted run would shadow the sources
echo "== ruff"
.venv/bin/ruff check hindsight_batch tests scripts setup.py
echo "== mypy"
.venv/bin/mypy
echo "== pytest (pure Python)"
HINDSIGHT_BATCH_EXPECT_BUILD=pure .venv/bin/python -m pytest -q "$@"
echo "== pytest (compiled with mypyc)"
trap 'scripts/compile.sh --clean >/dev/null' EXIT
scripts/compile.sh
HINDSIGHT_BATCH_EXPECT_BUILD=mypyc .venv/bin/python -m pytest -q "$@"
