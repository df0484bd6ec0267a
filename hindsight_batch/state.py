"""The state folder: opening its ledger, and what the ledger holds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight_batch.errors import EXIT_CONFIG, HindsightBatchError

if TYPE_CHECKING:
    from hindsight_batch.sinks.ledger import Ledger


def open_ledger(state_dir: Path | None) -> Ledger:
    """The ledger in ``state_dir`` or the default folder. A folder that cannot be made or written is a usage error
    (2) when named by the caller (``--state``), a configuration error (3) when it came from $XDG_STATE_HOME or
    $HOME."""
    from hindsight_batch.sinks.ledger import Ledger, LedgerPathError, default_state_dir

    try:
        return Ledger(state_dir or default_state_dir())
    except LedgerPathError as exc:
        if state_dir is None:
            exc.exit_code = EXIT_CONFIG
        raise


def ledger_totals(state_dir: Path | None = None) -> dict[str, Any]:
    """``{"path", "exists"}`` and, for an existing ledger, its runs, sources and documents by status (or the
    ``error`` that kept it from opening). Never creates a ledger."""
    from hindsight_batch.sinks.ledger import Ledger, default_state_dir

    state_dir = state_dir or default_state_dir()
    path = state_dir / "ledger.duckdb"
    if not path.exists():
        return {"path": str(path), "exists": False}
    try:
        with Ledger(state_dir) as ledger:
            totals = ledger.totals()
    except HindsightBatchError as exc:
        return {"path": str(path), "exists": True, "error": str(exc)}
    return {"path": str(path), "exists": True, **totals}
