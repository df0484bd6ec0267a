"""The ``runs`` and ``failed_files`` tables: each run, its status and summary, the files it could not read."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hindsight_batch.ledger.rows import FailedFile, RunRow
from hindsight_batch.ledger.tables import Tables, _now


class Runs(Tables):
    def start_run(self, run_id: str, command: str, mode: str) -> None:
        self.db.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, NULL, 'running', NULL)", [run_id, command, mode, _now()]
        )

    def finish_run(self, run_id: str, status: str, summary: Mapping[str, Any]) -> None:
        self.db.execute(
            "UPDATE runs SET finished_at = ?, status = ?, summary = ? WHERE run_id = ?",
            [_now(), status, json.dumps(summary), run_id],
        )

    def record_failed_files(self, run_id: str, failed: Sequence[Mapping[str, Any]]) -> None:
        """Files the run could not read or plan: (file, line where known, reason)."""
        self._insert("INSERT INTO failed_files VALUES", 4,
                     [[run_id, f["file"], f.get("line"), f["reason"]] for f in failed])

    def runs(self, last: int) -> list[RunRow]:
        """The ``last`` runs, latest first."""
        rows = self.db.execute("SELECT run_id, command, mode, started_at, finished_at, status FROM runs "
                               "ORDER BY started_at DESC LIMIT ?", [last]).fetchall()
        return [RunRow(*r) for r in rows]

    def has_run(self, run_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone() is not None

    def run_kind(self, run_id: str) -> tuple[str, str, str] | None:
        """(command, mode, status) of ``run_id``, or None when the ledger has no such run."""
        row = self.db.execute("SELECT command, mode, status FROM runs WHERE run_id = ?", [run_id]).fetchone()
        return (str(row[0]), str(row[1]), str(row[2])) if row else None

    def failed_files(self, run_id: str) -> list[FailedFile]:
        """Each file ``run_id`` could not read or plan, by file."""
        rows = self.db.execute("SELECT path, line, reason FROM failed_files WHERE run_id = ? ORDER BY path",
                               [run_id]).fetchall()
        return [FailedFile(r[0], r[1], r[2]) for r in rows]
