"""The manifest rows an unchanged source reuses, read from the ledger in one pass.

An import is told up front which sources it may reuse, in the order it will reach them. A statement then reads
each one's rows from the run that last read it, in that order, and the importer takes them as it goes, a thousand
at a time: a statement per file, or per window of sources, costs far more (docs/design-notes.md). One statement
covers up to :data:`_SOURCES` sources, whose rows DuckDB sorts in memory before the first comes out. The rows are
read through a cursor of their own, so the ledger's writes between two files do not end the statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hindsight_batch.ledger import manifest_table
from hindsight_batch.ledger.engine import duckdb

if TYPE_CHECKING:
    from hindsight_batch.plan.rows import ManifestRowJson

_FETCH = 1000  # result rows converted at a time
_SOURCES = 10_000  # sources one statement reads the rows of


class LatestRows:
    """Each expected source's rows from its last run, in the order expected (:meth:`take`). A statement runs when
    a source is taken and starts at it: an import that reuses nothing costs nothing here, and one whose first
    reused source comes late does not read the rows of those before it."""

    def __init__(self, db: duckdb.DuckDBPyConnection, paths: Sequence[str]) -> None:
        self._db = db
        self._paths = list(paths)
        self._place = {path: i for i, path in enumerate(self._paths)}
        self._cursor: duckdb.DuckDBPyConnection | None = None
        self._fetched: list[tuple[Any, ...]] = []
        self._next = 0  # in _fetched
        self._start = 0  # the place of the first source the next statement reads
        self._done = not self._paths

    def take(self, path: str, run_id: str) -> list[ManifestRowJson] | None:
        """The rows ``run_id`` wrote for ``path`` (:func:`manifest_table.from_columns`), in the order written; None
        when this pass cannot say (``path`` was not expected, was already passed, or another run last read it):
        then the caller looks them up alone. Every source expected before ``path`` is passed over."""
        place = self._place.get(path)
        if place is None:
            return None
        if self._cursor is None and self._next >= len(self._fetched):
            self._start = max(self._start, place)  # the next statement begins at the first source asked for
        while (head := self._head()) is not None and head[0] < place:
            self._next += 1
        if head is None or head[0] != place:
            return None
        rows: list[ManifestRowJson] = []
        same_run = True
        while (head := self._head()) is not None and head[0] == place:
            self._next += 1
            same_run = same_run and head[1] == run_id
            if head[2] is not None:  # a source with no rows has one row of NULLs here
                rows.append(manifest_table.from_columns(head[2:]))
        return rows if same_run else None

    def _head(self) -> tuple[Any, ...] | None:
        """The next result row: (place, last run, the row's columns...), or None once all are read."""
        if self._next < len(self._fetched):
            return self._fetched[self._next]
        while not self._done:
            if self._cursor is None:
                self._cursor = self._db.cursor()
                paths = self._paths[self._start:self._start + _SOURCES]
                self._cursor.execute(
                    "WITH expected AS (SELECT unnest(?) AS path, generate_subscripts(?, 1) - 1 + ? AS place) "
                    f"SELECT e.place, s.last_run_id, {manifest_table.select_list('m.')} "
                    "FROM expected e JOIN sources s USING (path) "
                    "LEFT JOIN manifest m ON m.run_id = s.last_run_id AND m.source_file = s.path "
                    "ORDER BY e.place, m.rowid", [paths, paths, self._start])
                self._start += len(paths)
            self._fetched = self._cursor.fetchmany(_FETCH)
            self._next = 0
            if self._fetched:
                return self._fetched[0]
            self._cursor.close()
            self._cursor = None
            self._done = self._start >= len(self._paths)
        return None

    def close(self) -> None:
        """End the statement (before the ledger closes)."""
        self._done = True
        self._fetched, self._next = [], 0
        if self._cursor is not None:
            self._cursor.close()
            self._cursor = None
