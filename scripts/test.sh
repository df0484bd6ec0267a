#!/usr/bin/env bash
# The README's test command: sets up .venv (idempotent), then runs ruff, mypy and the whole pytest suite twice:
# on the pure-Python package, then with the hot modules compiled by mypyc (those of the wheel `pip install .`
# builds, put in place by scripts/compile.sh --from), as a compiled install runs them. Compiled code checks types at run time: the second pass proves
# that every test's input gets through it the same way. What the tests need beyond .venv (the real server, pi,
# Debian's chromium) is installed first, when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    echo "== creating .venv: pip downloads the dev extra, about 100 MB from PyPI (playwright, duckdb, mypy, ruff, ...)"
    "$PY" -m venv .venv
fi
# Editable, so pure Python (an edit takes effect at once; docs/build.md); =0 keeps it so whatever the shell exports.
HINDSIGHT_BATCH_COMPILE=0 .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]' 2>&1 \
    | grep -v '^WARNING: Location' || true
.venv/bin/python -c 'import hindsight_batch, duckdb, ijson, pytest, playwright, xdist' >/dev/null
# Everything else the tests use is installed here, before pytest starts, so no download runs under a test's timeout
# (pytest-timeout's 300 s): each step says what it fetches and how big when it has to, and is instant once done.
echo "== test dependencies (each installed once per machine)"
# The real Hindsight server (tests/server.py), in its own environment: ~/.cache/hindsight-batch/server.
server=$(.venv/bin/python scripts/hindsight-server install)  # (set -e stops here on failure, not in an echo)
echo "Hindsight server: $server"
# The pinned pi for the conformance tests (tests/test_pi_conformance.py): ~/.cache/hindsight-batch/pi.
pi=$(.venv/bin/python -m tests.pi.install)
echo "pi: $pi"
# The review page's browser test (tests/test_review_browser.py) drives Debian's chromium through Playwright (never
# Playwright's own browser downloads).
if [ ! -x /usr/bin/chromium ]; then
    echo "installing chromium with apt-get: downloads about 110 MB of Debian packages, about 460 MB on disk (1-3 min)"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
echo "chromium: /usr/bin/chromium"
scripts/compile.sh --clean >/dev/null  # a build left by an interrupted run would shadow the sources
echo "== ruff"
.venv/bin/ruff check hindsight_batch tests scripts setup.py build_backend
echo "== mypy"
.venv/bin/mypy
# mypyc runs once: the wheel a user's `pip install .` would build (tests/built_wheel.py) is built in the background
# while the pure pass runs; tests/test_install.py installs it and the compiled pass runs its compiled modules.
work=$(mktemp -d); wheel_pid=""
trap 'kill "$wheel_pid" 2>/dev/null || true; rm -rf "$work"; scripts/compile.sh --clean >/dev/null' EXIT
.venv/bin/python -m tests.built_wheel "$work/wheel" >"$work/wheel.out" 2>&1 &
wheel_pid=$!
# Two workers (pytest-xdist), whole files each (--dist loadfile: a file's module fixtures are set up once).
echo "== pytest (pure Python; the compiled build is made meanwhile)"
HINDSIGHT_BATCH_EXPECT_BUILD=pure HINDSIGHT_BATCH_TEST_WHEEL="$work/wheel" \
    .venv/bin/python -m pytest -q -n 2 --dist loadfile "$@"
echo "== pytest (compiled with mypyc)"
if ! wait "$wheel_pid"; then
    cat "$work/wheel.out" >&2
    exit 1
fi
cat "$work/wheel.out"
scripts/compile.sh --from "$work"/wheel/*.whl
HINDSIGHT_BATCH_EXPECT_BUILD=mypyc .venv/bin/python -m pytest -q -n 2 --dist loadfile "$@"
