#!/usr/bin/env bash
# The README's test command: sets up .venv (idempotent), then runs ruff, mypy and the whole pytest suite twice:
# on the pure-Python package, then with the hot modules compiled by mypyc (scripts/compile.sh), as a compiled
# install (HINDSIGHT_BATCH_COMPILE=1) runs them. Compiled code checks types at run time: the second pass proves
# that every test's input gets through it the same way. Debian's chromium is installed when missing (the review
# page's browser test).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
# Editable, so pure Python (an edit takes effect at once; docs/build.md); =0 keeps it so whatever the shell exports.
HINDSIGHT_BATCH_COMPILE=0 .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]' 2>&1 \
    | grep -v '^WARNING: Location' || true
.venv/bin/python -c 'import hindsight_batch, duckdb, ijson, pytest, playwright' >/dev/null
# The review page's browser test (tests/test_review_browser.py) drives Debian's chromium through Playwright (never
# Playwright's own browser downloads); installed once, only when it is missing.
if [ ! -x /usr/bin/chromium ]; then
    echo "== installing chromium (apt-get) for the review page's browser test"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
scripts/compile.sh --clean >/dev/null  # a build left by an interrupted run would shadow the sources
echo "== ruff"
.venv/bin/ruff check hindsight_batch tests scripts setup.py build_backend
echo "== mypy"
.venv/bin/mypy
echo "== pytest (pure Python)"
HINDSIGHT_BATCH_EXPECT_BUILD=pure .venv/bin/python -m pytest -q "$@"
echo "== pytest (compiled with mypyc)"
trap 'scripts/compile.sh --clean >/dev/null' EXIT
scripts/compile.sh
HINDSIGHT_BATCH_EXPECT_BUILD=mypyc .venv/bin/python -m pytest -q "$@"
