"""The ``forgotten`` table: what ``forget --run`` did with each document of a run."""

from __future__ import annotations

from collections.abc import Iterable

from hindsight_batch.ledger.tables import Tables, _now


class Forgotten(Tables):
    def record_forgotten(self, run_id: str, rows: Iterable[tuple[str, str, str]], by_run: str) -> None:
        """(bank, document, action) of a ``forget --run``: ``deleted``, ``already-gone`` or ``kept-shared``."""
        now = _now()
        self._insert("INSERT INTO forgotten VALUES", 6,
                     [[run_id, bank, doc, action, by_run, now] for bank, doc, action in rows])

    def forgotten(self, run_id: str) -> dict[str, int]:
        rows = self.db.execute("SELECT action, count(*) FROM forgotten WHERE run_id = ? GROUP BY 1 ORDER BY 1",
                               [run_id]).fetchall()
        return {r[0]: r[1] for r in rows}
