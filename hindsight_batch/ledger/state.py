"""The state folder: opening its ledger, and what the ledger holds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight_batch.errors import HindsightBatchError, UsageError

if TYPE_CHECKING:
    from hindsight_batch.ledger import Ledger


def open_ledger(state_dir: Path | None, *, runs_needed: bool = False, reading: bool = False) -> Ledger:
    """The ledger in ``state_dir`` or the default folder. A folder that cannot be made or written is a usage error
    (2) when named by the caller (``--state``), a configuration error (3) when it came from $XDG_STATE_HOME or
    $HOME. ``runs_needed`` (report, verify, review: they look at past runs): a ledger that holds none is a usage
    error too, and nothing is created (a mistyped --state made an empty ledger and an empty report). ``reading``
    (report): in a folder this process may not write to, the ledger is opened read-only."""
    from hindsight_batch.ledger import DefaultStateFolderError, Ledger, LedgerPathError, default_state_dir

    folder = state_dir or default_state_dir()
    no_runs = UsageError(f"no runs in ledger {folder / 'ledger.duckdb'}: nothing was imported with this state "
                         "folder (a mistyped --state?)")
    if runs_needed and not (folder / "ledger.duckdb").is_file():
        raise no_runs
    try:
        ledger = Ledger(folder, read_only=reading and folder.is_dir() and not os.access(folder, os.W_OK))
    except LedgerPathError as exc:
        if state_dir is None:
            raise DefaultStateFolderError(str(exc)) from None
        raise
    if runs_needed and not ledger.runs(1):
        ledger.close()
        raise no_runs
    return ledger


def ledger_totals(state_dir: Path | None = None) -> dict[str, Any]:
    """``{"path", "exists"}`` and, for an existing ledger, its runs, sources and documents by status (or the
    ``error`` that kept it from opening). Never creates a ledger."""
    from hindsight_batch.ledger import Ledger, default_state_dir

    state_dir = state_dir or default_state_dir()
    path = state_dir / "ledger.duckdb"
    if not path.exists():
        return {"path": str(path), "exists": False}
    try:
        with Ledger(state_dir) as ledger:
            totals = ledger.totals()
    except HindsightBatchError as exc:
        return {"path": str(path), "exists": True, "error": str(exc)}
    return {"path": str(path), "exists": True, **totals.as_json()}
