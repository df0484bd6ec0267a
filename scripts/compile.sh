#!/usr/bin/env bash
# Build the mypyc-compiled modules (setup.py's COMPILED) in place, for .venv's editable install (which is pure
# Python: docs/build.md); --clean removes them. While they exist they shadow their .py files: an edit to one of
# those modules takes effect only after another build or a --clean (the CLI then warns, naming the edited files:
# setup.py records their hashes in hindsight_batch/_compiled_sources.json). HINDSIGHT_BATCH_COMPILE=1: fail rather
# than fall back to pure. --from WHEEL puts in place the compiled modules of a wheel built from this checkout
# (pip wheel .) instead of building them again. scripts/test.sh runs the suite both ways and always cleans up.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv/bin/python}"
clean() {
    find hindsight_batch -name '*.so' -delete
    rm -f hindsight_batch/_compiled_sources.json
    rm -rf build
}
clean
if [ "${1:-}" = "--clean" ]; then
    echo "compiled modules removed: $("$PY" -m hindsight_batch --version)"
    exit 0
fi
if [ "${1:-}" = "--from" ]; then
    "$PY" - "$2" <<'EOF'
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, ".")
import setup  # noqa: E402  (the one writer of the compiled sources' record; it builds only when run)

with zipfile.ZipFile(sys.argv[1]) as wheel:
    names = [n for n in wheel.namelist() if n.startswith(f"{setup.PACKAGE}/") and n.endswith((".so", ".pyd"))]
    if not names:
        sys.exit(f"scripts/compile.sh: {sys.argv[1]} holds no compiled module (a pure build)")
    for name in names:
        wheel.extract(name, ".")
setup._record_sources(Path(setup.PACKAGE))
EOF
    echo "compiled modules in place from $(basename "$2"): $("$PY" -m hindsight_batch --version)"
    exit 0
fi
log=$(mktemp)
if ! HINDSIGHT_BATCH_COMPILE=1 "$PY" -W ignore setup.py --quiet build_ext --inplace >"$log" 2>&1; then
    grep -v 'warning: Treating generator comprehension' "$log" | tail -40 >&2  # mypyc's errors, on failure only
    rm -f "$log"
    echo "scripts/compile.sh: the mypyc build failed" >&2
    exit 1
fi
rm -f "$log"
echo "compiled in place: $("$PY" -m hindsight_batch --version) (scripts/compile.sh --clean to undo)"
