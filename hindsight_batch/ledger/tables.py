"""What every part of the ledger shares: the DuckDB connection, the batched insert, the clock, its errors."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hindsight_batch.errors import EXIT_CONFIG, UsageError, out_of_room
from hindsight_batch.ledger.engine import duckdb
from hindsight_batch.ledger.latest_rows import LatestRows

_BATCH = 400
_COLUMN_BATCH = 5000


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class LedgerPathError(UsageError):
    """The state folder named by ``--state`` cannot be created or written, or its ledger cannot be opened."""


class DefaultStateFolderError(LedgerPathError):
    """The default state folder (from $XDG_STATE_HOME or $HOME, no ``--state``) cannot be created or written: the
    environment is wrong, not the command line."""

    exit_code = EXIT_CONFIG


class LedgerVersionError(LedgerPathError):
    """The ledger was made by a newer version (its schema version is higher than this code reads), or its version
    cannot be read: refused untouched, with the same exit code as a ledger that cannot be opened."""


class Tables:
    """The connection and helpers every part of :class:`~hindsight_batch.ledger.Ledger` uses (it opens them)."""

    path: Path
    db: duckdb.DuckDBPyConnection
    _types: dict[str, list[str]]  # column types by table, for _insert
    _latest: LatestRows | None  # what latest_rows reads from (expect_reuse)

    def _insert(self, statement: str, width: int, rows: list[list[Any]]) -> None:
        """Many rows in few statements, bound as one list per column and unnested: a handful of parameters
        whatever the row count (DuckDB's executemany binds row by row, far slower: docs/design-notes.md)."""
        if not rows:
            return
        table = statement.split(" INTO ", 1)[1].split()[0]
        types = self._column_types(table)
        assert len(types) == width, (table, types)
        columns = ", ".join(f"unnest(?::{kind}[])" for kind in types)
        for start in range(0, len(rows), _COLUMN_BATCH):
            part = rows[start : start + _COLUMN_BATCH]
            self.db.execute(f"{statement.removesuffix(' VALUES')} SELECT * FROM (SELECT {columns})",
                            [list(column) for column in zip(*part, strict=True)])

    def _column_types(self, table: str) -> list[str]:
        if table not in self._types:
            self._types[table] = [str(r[0]) for r in self.db.execute(
                "SELECT data_type FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                [table]).fetchall()]
        return self._types[table]

    def _unwritable(self, exc: BaseException) -> LedgerPathError | None:
        reason = out_of_room(exc)
        return None if reason is None else LedgerPathError(f"ledger {self.path}: cannot write: {reason}")
