"""The ``sources`` table: each session file read, as it was (size, time, hashes, header), and by which run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hindsight_batch.ledger.rows import SourceState
from hindsight_batch.ledger.tables import _COLUMN_BATCH, Tables, _now

if TYPE_CHECKING:
    from hindsight_batch.plan.rows import SourceRecord


class Sources(Tables):
    def sources(self) -> dict[str, SourceState]:
        rows = self.db.execute("SELECT path, size, mtime_ns, settings_hash, last_run_id, sha256, header FROM sources"
                               ).fetchall()
        return {r[0]: SourceState(r[1], r[2], r[3], r[4], r[5], r[6]) for r in rows}

    def source_sessions(self) -> dict[str, str]:
        """path -> session id of every source seen."""
        return dict(self.db.execute("SELECT path, session_id FROM sources").fetchall())

    def record_sources(self, rows: Sequence[SourceRecord]) -> None:
        """(path, size, mtime_ns, session id, settings hash, run id, SHA-256, header) of sources just read."""
        now = _now()
        self._insert("INSERT OR REPLACE INTO sources VALUES", 9,
                     [[path, size, mtime, session, shape, run, now, sha, header] for path, size, mtime, session, shape,
                      run, sha, header in rows])

    def record_headers(self, rows: Sequence[tuple[str, str]]) -> None:
        """(path, header) of recorded sources whose header the ledger lacks (recorded before it kept them)."""
        for start in range(0, len(rows), _COLUMN_BATCH):
            part = rows[start : start + _COLUMN_BATCH]
            self.db.execute("UPDATE sources SET header = h.header FROM (SELECT unnest(?::VARCHAR[]) AS path, "
                            "unnest(?::VARCHAR[]) AS header) h WHERE sources.path = h.path",
                            [[path for path, _ in part], [header for _, header in part]])
