"""Build hook for the optional compiled build. Everything else about the package is in ``pyproject.toml``.

With ``HINDSIGHT_BATCH_COMPILE=1`` the modules every imported entry passes through are compiled to C extensions
with mypyc (as black and mypy ship theirs): the same source, type-checked as it is, runs faster (the figures
are in the README, "Performance"). Without it the package is pure Python, which is what a development (editable) install
wants: an edit takes effect at once.

mypyc type-checks what it compiles, so it needs mypy and the runtime dependencies (their types) where it runs:
the ``dev`` extra's environment, without build isolation. ``scripts/compile.sh`` builds in place for this
checkout's ``.venv``; elsewhere, ``pip install '.[dev]'`` and then
``HINDSIGHT_BATCH_COMPILE=1 pip install --no-build-isolation .``.
"""

from __future__ import annotations

import os

from setuptools import setup

# Reading, retention, redaction, chunking, planning and routing: the per-entry, per-chunk and per-word loops.
COMPILED = [
    "hindsight_batch/jsoncodec.py",
    "hindsight_batch/session/model.py",
    "hindsight_batch/session/jsonl.py",
    "hindsight_batch/session/reader.py",
    "hindsight_batch/session/tree.py",
    "hindsight_batch/retention/memory_filter.py",
    "hindsight_batch/retention/projection.py",
    "hindsight_batch/retention/records.py",
    "hindsight_batch/retention/stagetimes.py",
    "hindsight_batch/redaction/redactor.py",
    "hindsight_batch/textscan.py",
    "hindsight_batch/chunking.py",
    "hindsight_batch/planning.py",
    "hindsight_batch/routing/signals.py",
    "hindsight_batch/routing/strategy.py",
]


def _ext_modules() -> list[object]:
    if os.environ.get("HINDSIGHT_BATCH_COMPILE", "") != "1":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as exc:
        raise SystemExit(
            "HINDSIGHT_BATCH_COMPILE=1 needs mypy (which brings mypyc) and the runtime dependencies in the build "
            "environment: pip install '.[dev]', then pip install --no-build-isolation ."
        ) from exc

    # One shared library inside the package (not at the top of site-packages), named in hindsight_batch.build().
    return list(mypycify(COMPILED, group_name="hindsight_batch._compiled"))


setup(ext_modules=_ext_modules())
