"""hindsight-batch: move Pi coding-agent transcripts into Hindsight memory, safely.

The package is a library first; :mod:`hindsight_batch.cli` is a thin click layer over it.
"""

import hashlib
import importlib.util
import json
from pathlib import Path

__version__ = "0.1.0"

# What scripts/compile.sh compiled in place: each source's SHA-256 at the time (relative path -> hex digest).
COMPILED_SOURCES = "_compiled_sources.json"


def build() -> str:
    """``"mypyc"`` when the hot modules are compiled (``HINDSIGHT_BATCH_COMPILE=1``, see ``setup.py``), else
    ``"pure"``: the compiled modules share one library, so its presence tells."""
    return "mypyc" if importlib.util.find_spec("hindsight_batch._compiled__mypyc") is not None else "pure"


def stale_compiled(package: Path | None = None) -> list[str]:
    """Sources edited since ``scripts/compile.sh`` compiled them in place: their compiled modules shadow them,
    so the edits do not run. Empty for a pure build, and for an install compiled elsewhere (no record)."""
    package = package or Path(__file__).parent
    try:
        recorded = json.loads((package / COMPILED_SOURCES).read_text())
    except (OSError, ValueError):
        return []
    stale = []
    for name, digest in sorted(recorded.items()):
        try:
            current = hashlib.sha256((package / name).read_bytes()).hexdigest()
        except OSError:
            current = ""
        if current != digest:
            stale.append(name)
    return stale
