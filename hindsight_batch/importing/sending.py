"""``--apply``: a planned session's items to the document sink, except those the server holds already.

In: the plans, and what earlier runs sent (:data:`Applied`, from the ledger). Out: items handed to a
:class:`~hindsight_batch.interfaces.DocumentSink`, the progress bar's upload counts, the summary's ``upload``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hindsight_batch.ledger import SETTLED, DocumentRow
from hindsight_batch.session.names import source_name

if TYPE_CHECKING:
    from hindsight_batch.importing.accounting import UploadCounts
    from hindsight_batch.importing.progress import ProgressBar
    from hindsight_batch.interfaces import DocumentSink
    from hindsight_batch.plan.planning import SessionPlan

__all__ = ["Applied", "Sending", "planned_status"]

Applied = dict[tuple[str, str], tuple[str, str]]  # (bank, document) -> (item hash, status) of documents sent


def planned_status(applied: Applied, bank_id: str | None, document_id: str | None, item_sha256: str | None) -> str:
    """``unchanged`` when the server already holds the row's item, unchanged; else ``planned``."""
    done = applied.get((bank_id or "", document_id or ""))
    if done and done[0] == item_sha256 and done[1] in SETTLED:
        return "unchanged"
    return "planned"


class Sending:
    """The items of each plan to ``sink``, skipping those ``applied`` says the server holds unchanged."""

    def __init__(self, sink: DocumentSink, applied: Applied) -> None:
        self.sink = sink
        self.applied = applied

    def send(self, plan: SessionPlan, sizes: list[int]) -> int:
        """The plan's items to the sink, except those the server holds already, unchanged; how many went."""
        sent = 0
        for planned, size in zip(plan.items, sizes, strict=True):
            if planned_status(self.applied, planned.bank_id, planned.item.document_id,
                              planned.item_hash) == "unchanged":
                continue
            item = planned.item
            row = DocumentRow(
                bank_id=planned.bank_id, document_id=item.document_id, bank_role=planned.bank_role,
                source_path=source_name(plan.path), session_id=plan.session.session_id,
                content_hash=item.metadata["content_hash"], item_hash=planned.item_hash, tags=item.tags,
                metadata=item.metadata,
            )
            self.sink.add(row, item.payload(), size + 1024)
            sent += 1
        return sent

    def show_on(self, bar: ProgressBar, refresh: bool = False) -> None:
        """How many items were sent and how many the server confirmed, on the bar (``refresh``: at once, when the
        bar's bytes no longer move: the last requests, --wait)."""
        statuses = self.sink.stats.statuses
        failed = statuses["failed"] + statuses["missing"]
        bar.set_postfix_str(f"items sent {statuses['sent'] + statuses['confirmed'] + statuses['missing']}, "
                            f"confirmed {statuses['confirmed']}" + (f", failed {failed}" if failed else ""),
                            refresh=refresh)

    def finish(self, bar: ProgressBar | None, wait: bool, wait_timeout: float) -> int:
        """The last requests sent (the bar, when shown, kept up to date), with ``wait`` the server's operations
        waited for; how many are still open."""
        if bar is not None:
            self.sink.changed = lambda: self.show_on(bar, refresh=True)
        self.sink.finish()
        return self.sink.wait_for_operations(wait_timeout) if wait else 0

    def summary(self, still_open: int) -> UploadCounts:
        """The summary's ``upload``: requests, documents by status, failures, operations still open, errors."""
        stats = self.sink.stats
        return {
            "requests": stats.requests,
            "documents": dict(sorted((k, v) for k, v in stats.statuses.items() if v)),
            "failed": stats.statuses["failed"] + stats.statuses["missing"],
            "operations_still_open": still_open,
            "errors": stats.errors,
        }
