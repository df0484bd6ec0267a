"""The ledger's rows as the code reads them back: typed tuples, one per table's row (the manifest's rows come back
in their JSON form, :class:`hindsight_batch.plan.rows.ManifestRowJson`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple


class SourceState(NamedTuple):
    size: int
    mtime_ns: int
    settings_hash: str
    last_run_id: str
    sha256: str | None = None  # of the file's bytes when last read (None: recorded before hashes were kept)
    header: str | None = None  # its session header (session.model.header_text; None: recorded before it was kept)


class ReviewedSource(NamedTuple):
    """What a dry run saw of one source it planned or reused (table ``run_sources``): ``import --apply
    --from-run`` sends its items only while the file and the settings are still exactly these."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    settings_hash: str
    rows_run_id: str  # the run whose manifest rows hold this source's plan (an earlier one for a reused source)


# A reviewed item: what must be sent again, exactly (document id, item hash, bank).
class ReviewedItem(NamedTuple):
    """One item a dry run planned, as ``--from-run`` compares it with the plan made again."""

    document_id: str
    item_sha256: str
    bank_id: str


class DocumentRow(NamedTuple):
    bank_id: str
    document_id: str
    bank_role: str
    source_path: str
    session_id: str
    content_hash: str
    item_hash: str
    tags: list[str]
    metadata: dict[str, str]
    status: str = "pending"
    operation_id: str | None = None


class RunRow(NamedTuple):
    run_id: str
    command: str
    mode: str
    started_at: datetime | None
    finished_at: datetime | None
    status: str


class ManifestCounts(NamedTuple):
    """One run's manifest rows counted: each chunk once (its first row), except ``banks`` (every row with a bank).
    Each list is most first, ties in the order first written, as ``collections.Counter.most_common`` orders."""

    chunks: int
    routes: list[tuple[str, int]]
    banks: list[tuple[str, int]]
    redactions: list[tuple[str, int]]
    # (skip_reason, reason, chunks) of skipped chunks, by group in the order first written; skip_reason is None
    # on rows written before it existed (schema version 1).
    skips: list[tuple[str | None, str, int]]


class FailedFile(NamedTuple):
    """A file a run could not read or plan (table ``failed_files``)."""

    file: str
    line: int | None  # where known
    reason: str


class Delivery(NamedTuple):
    """A document a run sent (table ``deliveries``)."""

    bank_id: str
    document_id: str
    shared: bool  # another run wrote it too


class LedgerTotals(NamedTuple):
    """How much the ledger holds."""

    runs: int
    sources: int
    documents: dict[str, int]  # upload status -> documents

    def as_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "sources": self.sources, "documents": self.documents}

