"""The ledger: one DuckDB file in the state folder holding runs, sources, documents and their upload state,
manifest rows, review items and forget records.

In: what a run planned and sent. Out: what a re-run may skip or reuse, what ``report``, ``verify``, ``review`` and
``forget`` read. :class:`Ledger` is the one entry point; each table's reads and writes are in the module named for it.
"""

from hindsight_batch.ledger.core import Ledger, default_state_dir
from hindsight_batch.ledger.documents import SETTLED
from hindsight_batch.ledger.manifest import RUN_ROWS_FILTER
from hindsight_batch.ledger.rows import (
    Delivery,
    DocumentRow,
    FailedFile,
    LedgerTotals,
    ManifestCounts,
    ReviewedItem,
    ReviewedSource,
    RunRow,
    SourceState,
)
from hindsight_batch.ledger.tables import DefaultStateFolderError, LedgerPathError, LedgerVersionError

__all__ = ["RUN_ROWS_FILTER", "SETTLED", "DefaultStateFolderError", "Delivery", "DocumentRow", "FailedFile", "Ledger",
           "LedgerPathError", "LedgerTotals", "LedgerVersionError", "ManifestCounts", "ReviewedItem",
           "ReviewedSource", "RunRow", "SourceState", "default_state_dir"]
