"""What an import writes to the ledger, kept and written in batches.

In: a planned session's encoded manifest records and its source, a reused source's header and what a dry run saw
of it. Out: the ledger's manifest rows, sources, the run's sources (for ``--from-run``) and recorded headers.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hindsight_batch.interfaces import LedgerSink
    from hindsight_batch.ledger import ReviewedSource
    from hindsight_batch.plan.rows import SourceRecord

__all__ = ["FLUSH_ROWS", "FLUSH_SECONDS", "FLUSH_SOURCES", "LedgerBatch"]

# At most this many manifest rows or sources, or this many seconds of work, wait (a killed run reads them again).
# Each batch costs DuckDB a few statements: a batch per few sources was a noticeable part of an import.
FLUSH_ROWS = 2000
FLUSH_SOURCES = 1000
FLUSH_SECONDS = 5.0


class LedgerBatch:
    """The ledger writes of an import not yet made; :meth:`flush` makes them, rows before their sources."""

    def __init__(self, ledger: LedgerSink, run_id: str) -> None:
        self.ledger = ledger
        self.run_id = run_id
        self.records: list[bytes] = []  # manifest rows (manifest_table.record_line)
        self.sources: list[SourceRecord] = []
        self.reviewable: list[ReviewedSource] = []  # a dry run's sources, for --from-run
        self.headers: list[tuple[str, str]] = []  # (path, header) of reused sources recorded without one
        self._due = time.monotonic() + FLUSH_SECONDS

    def add_session(self, records: list[bytes], source: SourceRecord, reviewable: ReviewedSource | None) -> None:
        """A planned session's rows and its source; written now when the batch is full or old enough."""
        self.records += records
        self.sources.append(source)
        if reviewable is not None:
            self.reviewable.append(reviewable)
        if (len(self.records) >= FLUSH_ROWS or len(self.sources) >= FLUSH_SOURCES
                or time.monotonic() >= self._due):
            self.flush()

    def add_reused(self, header: tuple[str, str] | None, reviewable: ReviewedSource | None) -> None:
        """A reused source's header (when the ledger lacks it) and what a dry run saw of it."""
        if header is not None:
            self.headers.append(header)
        if reviewable is not None:
            self.reviewable.append(reviewable)

    def flush(self) -> None:
        """Manifest rows, then the sources they came from: a source is only marked read once its rows are in."""
        self.ledger.add_manifest_records(self.records)
        self.ledger.record_sources(self.sources)
        self.ledger.record_run_sources(self.run_id, self.reviewable)
        self.ledger.record_headers(self.headers)
        self.records, self.sources, self.reviewable, self.headers = [], [], [], []
        self._due = time.monotonic() + FLUSH_SECONDS
