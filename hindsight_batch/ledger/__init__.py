"""The ledger: one DuckDB file in the state folder holding runs, sources, documents and their upload state,
manifest rows, review items and forget records.

In: what a run planned and sent. Out: what a re-run may skip or reuse, what ``report``, ``verify``, ``review`` and
``forget`` read. :class:`Ledger` is the one entry point.
"""

from hindsight_batch.ledger.core import (
    RUN_ROWS_FILTER,
    SETTLED,
    DocumentRow,
    Ledger,
    LedgerPathError,
    LedgerVersionError,
    ManifestCounts,
    ReviewedItem,
    ReviewedSource,
    RunRow,
    SourceState,
    default_state_dir,
)

__all__ = ["RUN_ROWS_FILTER", "SETTLED", "DocumentRow", "Ledger", "LedgerPathError", "LedgerVersionError",
           "ManifestCounts", "ReviewedItem", "ReviewedSource", "RunRow", "SourceState", "default_state_dir"]
