"""The ``run_sources`` table: what a dry run saw, which ``import --apply --from-run`` sends exactly."""

from __future__ import annotations

from collections.abc import Sequence

from hindsight_batch.ledger.rows import ReviewedItem, ReviewedSource
from hindsight_batch.ledger.tables import Tables


class FromRun(Tables):
    def record_run_sources(self, run_id: str, rows: Sequence[ReviewedSource]) -> None:
        """What the dry run ``run_id`` saw of each source it planned or reused."""
        self._insert("INSERT INTO run_sources VALUES", 7,
                     [[run_id, r.path, r.size, r.mtime_ns, r.sha256, r.settings_hash, r.rows_run_id] for r in rows])

    def reviewed_sources(self, run_id: str) -> dict[str, ReviewedSource]:
        """path -> what the dry run ``run_id`` saw of it (empty for a run from before ``run_sources`` existed)."""
        rows = self.db.execute("SELECT path, size, mtime_ns, sha256, settings_hash, rows_run_id FROM run_sources "
                               "WHERE run_id = ? ORDER BY path", [run_id]).fetchall()
        return {r[0]: ReviewedSource(*r) for r in rows}

    def reviewed_items(self, run_id: str) -> dict[str, set[ReviewedItem]]:
        """path -> (document id, item hash, bank) of every item the dry run ``run_id`` planned for it: its manifest
        rows, or for a reused source those of the run that last read it."""
        rows = self.db.execute(
            "SELECT s.path, m.document_id, m.item_sha256, m.bank_id FROM run_sources s JOIN manifest m "
            "ON m.run_id = s.rows_run_id AND m.source_file = s.path "
            "WHERE s.run_id = ? AND m.document_id IS NOT NULL", [run_id]).fetchall()
        found: dict[str, set[ReviewedItem]] = {}
        for path, document, item, bank in rows:
            found.setdefault(path, set()).add(ReviewedItem(document, item or "", bank or ""))
        return found
