"""hindsight-batch: move Pi coding-agent transcripts into Hindsight memory, safely.

The package is a library first; :mod:`hindsight_batch.cli` is a thin click layer over it. What a program needs:

* :func:`load_settings` - the :class:`Settings` a session in a folder gets (config files, the extension's,
  environment).
* :func:`run_import` with :class:`ImportOptions` - plan (dry run) or upload (``apply=True``) session files;
  returns an :class:`ImportResult` (the run's typed ``summary``, an :class:`ImportSummary`; the manifest path; the
  :class:`StaleDocuments` with ``delete_stale=True``; ``to_dict()`` is the whole ``import --json`` document, also
  ``data`` for programs written before ``summary``).
* :func:`flush_queues` - drain the live extension's retain queues; one :class:`FlushReport` per queue file.
* :func:`prune_file`, :func:`prune_paths` - remove persisted recall messages from session files (a preview unless
  ``confirm=True``; one :class:`PruneResult` each); :func:`restore` puts a backup back (:class:`PruneRefused` when
  the file is too recent).
* :func:`verify_documents` - compare the server with the ledger (:class:`VerifyReport`); :func:`forget_applied_run`
  undoes an applied run (:class:`ForgetReport`); :func:`ledger_report` summarises a run from the ledger;
  :func:`preview_route` shows how a text would be routed (:class:`MemoryRouteDecision`);
  :func:`write_review_page` writes a run's review page (one self-contained HTML file).
* ``ImportOptions(apply=True, from_run=RUN)`` sends exactly what the dry run RUN planned
  (:attr:`ImportResult.refused` counts the sessions refused because they changed since).
* Errors: every failure a user can fix is a :class:`HindsightBatchError` whose ``exit_code`` the CLI exits with
  (:class:`UsageError` 2, :class:`ConfigError` 3, :class:`ServerError` 4, :class:`BusyError` 75).

* :func:`build` names the build that runs (``"mypyc"`` or ``"pure"``); :func:`build_notice` says why an install
  runs pure although it tried to compile (no C compiler, say), and is None otherwise.

(``verify`` and ``forget`` are also command modules, ``hindsight_batch.commands.verify`` and ``.forget``, so
their functions carry longer names.)
Importing this package is cheap: the names above are loaded on first use, so neither the pipeline nor httpx,
tqdm or duckdb is imported until a function that needs it runs.

Example::

    from hindsight_batch import ImportOptions, run_import

    result = run_import(ImportOptions(paths=[Path("sessions")], manifest=Path("plan.jsonl")))
    print(result.sessions, result.chunks, result.statuses)
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hindsight_batch.api import (
        ImportOptions,
        ImportResult,
        StaleDocuments,
        flush_queues,
        forget_applied_run,
        ledger_report,
        load_settings,
        preview_route,
        prune_paths,
        run_import,
        verify_documents,
        write_review_page,
    )
    from hindsight_batch.commands.forget import ForgetReport
    from hindsight_batch.commands.verify import VerifyReport
    from hindsight_batch.config import Settings
    from hindsight_batch.errors import BusyError, ConfigError, HindsightBatchError, ServerError, UsageError
    from hindsight_batch.importing.accounting import ImportSummary
    from hindsight_batch.prune import PruneRefused, PruneResult, prune_file, restore
    from hindsight_batch.queue.flush import FlushReport
    from hindsight_batch.routing.models import MemoryRouteDecision

# Public name -> the module that defines it, imported on first use (PEP 562).
_LAZY = {
    **dict.fromkeys(("ImportOptions", "ImportResult", "StaleDocuments", "flush_queues", "forget_applied_run",
                     "ledger_report", "load_settings", "preview_route", "prune_paths", "run_import",
                     "verify_documents", "write_review_page"), "hindsight_batch.api"),
    "Settings": "hindsight_batch.config",
    **dict.fromkeys(("BusyError", "ConfigError", "HindsightBatchError", "ServerError", "UsageError"),
                    "hindsight_batch.errors"),
    "ForgetReport": "hindsight_batch.commands.forget",
    "ImportSummary": "hindsight_batch.importing.accounting",
    **dict.fromkeys(("PruneRefused", "PruneResult", "prune_file", "restore"), "hindsight_batch.prune"),
    "FlushReport": "hindsight_batch.queue.flush",
    "MemoryRouteDecision": "hindsight_batch.routing.models",
    "VerifyReport": "hindsight_batch.commands.verify",
}

__all__ = [
    "COMPILED_SOURCES",
    "BusyError",
    "ConfigError",
    "FlushReport",
    "ForgetReport",
    "HindsightBatchError",
    "ImportOptions",
    "ImportResult",
    "ImportSummary",
    "MemoryRouteDecision",
    "PruneRefused",
    "PruneResult",
    "ServerError",
    "Settings",
    "StaleDocuments",
    "UsageError",
    "VerifyReport",
    "__version__",
    "build",
    "build_notice",
    "flush_queues",
    "forget_applied_run",
    "ledger_report",
    "load_settings",
    "preview_route",
    "prune_file",
    "prune_paths",
    "restore",
    "run_import",
    "stale_compiled",
    "verify_documents",
    "write_review_page",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__version__ = "0.1.0"

# What scripts/compile.sh compiled in place: each source's SHA-256 at the time (relative path -> hex digest).
COMPILED_SOURCES = "_compiled_sources.json"
# Written by setup.py into an installed package whose compiled build failed: {"build": "pure", "fallback": why}.
BUILD_RECORD = "_build.json"


def build() -> str:
    """``"mypyc"`` when the hot modules are compiled (the default install where a C compiler is present, see
    ``setup.py``), else ``"pure"``: the compiled modules share one library, so its presence tells."""
    return "mypyc" if importlib.util.find_spec("hindsight_batch._compiled__mypyc") is not None else "pure"


def build_notice(package: Path | None = None) -> str | None:
    """One line for a user whose install fell back to pure Python (the install's output said so, but pip hides
    it): the pure build runs, and why. None when compiled, when pure by choice (``HINDSIGHT_BATCH_COMPILE=0``, an
    editable install) and in a checkout."""
    package = package or Path(__file__).parent
    try:
        reason = json.loads((package / BUILD_RECORD).read_text())["fallback"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(reason, str) or build() != "pure":
        return None
    return (f"hindsight-batch: note: the pure-Python build runs (slower) because the compiled one failed when it was "
            f"installed: {reason}. See docs/build.md (HINDSIGHT_BATCH_COMPILE=0 installs pure without this note).")


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
