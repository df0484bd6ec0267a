"""The ``manifest`` table: every manifest row a run wrote, loaded in slices; ``report``'s counts; the rows
an unchanged source reuses."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from hindsight_batch.ledger import manifest_table
from hindsight_batch.ledger import schema as ledger_schema
from hindsight_batch.ledger.latest_rows import LatestRows
from hindsight_batch.ledger.rows import ManifestCounts
from hindsight_batch.ledger.tables import Tables

if TYPE_CHECKING:
    from hindsight_batch.plan.rows import ManifestRow, ManifestRowJson


LOAD_ROWS = 2000  # manifest records loaded at once (:meth:`Ledger.add_manifest_records`)
# A run's manifest rows with their write order (``r``), and each chunk's first row.
# A run's manifest rows (``m``; the run's id is the query's parameter $1): those it wrote, and for each source a
# dry run reused unchanged, the rows of the run that read it (they stay under that run): what ``report``, the review
# page and ``import --apply --from-run`` (reviewed_items) all take as the run's plan.
RUN_ROWS_FILTER = ("(m.run_id = $1 OR EXISTS (SELECT 1 FROM run_sources s WHERE s.run_id = $1 "
                   "AND s.rows_run_id = m.run_id AND s.path = m.source_file))")
_RUN_ROWS = (f"WITH run_rows AS (SELECT rowid AS r, * FROM manifest m WHERE {RUN_ROWS_FILTER}), "
             "chunks AS (SELECT * FROM run_rows QUALIFY row_number() OVER "
             "(PARTITION BY source_file, segment, chunk_index ORDER BY r) = 1) ")


class ManifestRows(Tables):
    def add_manifest_rows(self, rows: Iterable[ManifestRow]) -> None:
        """Manifest rows (as the manifest file has them; ``content`` is stored only when a row has it)."""
        self.add_manifest_records([manifest_table.record_line(r.as_json()) for r in rows])

    def add_manifest_records(self, lines: Sequence[bytes]) -> None:
        """Manifest rows already encoded by :func:`manifest_table.record_line` (the importer encodes each row once,
        for the manifest file and for here), loaded through a temporary JSON-lines file
        (:func:`ledger_schema.load_records`)."""
        # In slices: DuckDB's JSON reader holds memory in proportion to what one load reads, and a session of many
        # short messages hands over thousands of rows at once.
        for start in range(0, len(lines), LOAD_ROWS):
            try:
                with tempfile.NamedTemporaryFile("wb", dir=self.path.parent, prefix=".manifest-",
                                                 suffix=".jsonl") as out:
                    out.write(b"\n".join(lines[start:start + LOAD_ROWS]) + b"\n")
                    out.flush()
                    ledger_schema.load_records(self.db, out.name)
            except OSError as exc:  # the state folder's disk is full: said so, naming the ledger
                raise self._unwritable(exc) or exc from None

    def manifest_counts(self, run_id: str) -> ManifestCounts:
        """``report``'s counts of one run's manifest rows, computed by DuckDB."""
        def ranked(query: str) -> list[tuple[str, int]]:
            return [(r[0], int(r[1])) for r in self.db.execute(_RUN_ROWS + query, [run_id]).fetchall()]

        chunks = self.db.execute(_RUN_ROWS + "SELECT count(*) FROM chunks", [run_id]).fetchone()
        routes = ranked("SELECT route, count(*) AS n FROM chunks GROUP BY 1 ORDER BY n DESC, min(r)")
        banks = ranked("SELECT bank_id, count(*) AS n FROM run_rows WHERE bank_id <> '' GROUP BY 1 "
                       "ORDER BY n DESC, min(r)")
        # Each rule's first appearance: the first chunk that has it, then its place in that chunk's map.
        redactions = ranked(
            "SELECT rule, sum(n) AS total FROM (SELECT r, unnest(map_keys(redactions)) AS rule, "
            "unnest(map_values(redactions)) AS n, unnest(range(cardinality(redactions)::BIGINT)) AS place FROM chunks) "
            "GROUP BY 1 ORDER BY total DESC, min(r), arg_min(place, r)")
        skips = self.db.execute(_RUN_ROWS + "SELECT skip_reason, reason, count(*) FROM chunks WHERE status = "
                                "'skipped' GROUP BY 1, 2 ORDER BY min(r)", [run_id]).fetchall()
        return ManifestCounts(int(chunks[0]) if chunks else 0, routes, banks, redactions,
                              [(r[0], r[1], int(r[2])) for r in skips])

    def expect_reuse(self, paths: Sequence[str]) -> None:
        """The sources an import may reuse (:meth:`latest_rows`), in the order it will ask for them: their rows are
        then read in one pass (:class:`LatestRows`)."""
        if self._latest is not None:
            self._latest.close()
        self._latest = LatestRows(self.db, paths)

    def latest_rows(self, source_file: str, run_id: str) -> list[ManifestRowJson]:
        """The manifest rows ``run_id`` wrote for ``source_file`` (as the manifest file has them,
        :meth:`ManifestRow.as_json`, in this version's form, without content), in the order written: what an
        unchanged source reuses. From the pass :meth:`expect_reuse` set up, else looked up alone."""
        found = self._latest.take(source_file, run_id) if self._latest is not None else None
        if found is None:
            found = [manifest_table.from_columns(values) for values in self.db.execute(
                f"SELECT {manifest_table.select_list()} FROM manifest WHERE run_id = ? AND source_file = ? "
                "ORDER BY rowid", [run_id, source_file]).fetchall()]
        from hindsight_batch.plan.rows import current_form  # loads routing's models: only when rows are reused

        return [current_form(data) for data in found]
