"""The ``documents`` and ``deliveries`` tables: the upload state machine (pending, sent, confirmed,
failed, missing, forgotten) of every item sent, and which runs wrote it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from hindsight_batch.ledger.rows import Delivery, DocumentRow
from hindsight_batch.ledger.tables import _BATCH, Tables, _now

# What a re-run does not send again while the item is unchanged: on the server (sent, not yet known missing, or
# confirmed there with our content hash), or refused for good (a 4xx about the item itself). Everything else --
# pending, missing, failed with a retryable error, forgotten, deleted as stale -- is sent again.
SETTLED = ("sent", "confirmed", "failed")
_DOCUMENT_COLUMNS = ("bank_id, document_id, bank_role, source_path, session_id, content_hash, item_hash, tags, "
                     "metadata, status, operation_id")


def _document_row(r: tuple[Any, ...]) -> DocumentRow:
    return DocumentRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7] or "[]"), json.loads(r[8] or "{}"),
                       r[9], r[10])


class Documents(Tables):
    def document_hashes(self) -> dict[tuple[str, str], tuple[str, str]]:
        """(bank, document) -> (item hash, status) for every document an applied run has sent; a failure that
        may pass on a retry (a server error; rows from before ``retryable`` existed too) has status ``retry``."""
        rows = self.db.execute(
            "SELECT bank_id, document_id, item_hash, CASE WHEN status = 'failed' AND retryable IS DISTINCT FROM "
            "false THEN 'retry' ELSE status END FROM documents"
        ).fetchall()
        return {(r[0], r[1]): (r[2], r[3]) for r in rows}

    def send_attempts(self, bank_id: str, rows: Iterable[DocumentRow]) -> dict[str, int]:
        """document id -> the send attempt its next request is: 0 for a document never sent; the same attempt
        again while the document is still ``pending`` (a crash-and-retry, or a refused batch split: the request
        must stay a no-op on the server, S5); one more after it settled (missing, forgotten, failed, changed), so
        that a deliberate resend of the same content gets a new operation id the server has not seen done."""
        ids = [r.document_id for r in rows]
        found: dict[str, int] = {}
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            found.update(self.db.execute(
                "SELECT document_id, coalesce(attempt, 0) + CASE WHEN status = 'pending' THEN 0 ELSE 1 END "
                f"FROM documents WHERE bank_id = ? AND document_id IN ({', '.join('?' * len(part))})",
                [bank_id, *part]).fetchall())
        return {doc_id: int(found.get(doc_id, 0)) for doc_id in ids}

    def mark_pending(self, rows: Iterable[DocumentRow], operation_id: str, run_id: str,
                     attempts: Mapping[str, int] | None = None) -> None:
        """Record documents as about to be sent (S5: a kill after this point is resumed by the next run), with
        the send attempt (:meth:`send_attempts`) their operation id was made from."""
        now = _now()
        rows = list(rows)
        attempts = attempts or {}
        self._insert(
            "INSERT OR REPLACE INTO documents VALUES", 16,
            [[r.bank_id, r.document_id, r.bank_role, r.source_path, r.session_id, r.content_hash, r.item_hash,
              "pending", operation_id, None, run_id, now, json.dumps(r.tags), json.dumps(r.metadata, sort_keys=True),
              None, attempts.get(r.document_id, 0)] for r in rows],
        )
        # Which runs wrote each document: `forget --run` deletes only what no other run also wrote.
        self._insert("INSERT INTO deliveries VALUES", 5,
                     [[run_id, r.bank_id, r.document_id, r.item_hash, now] for r in rows])

    def set_status(self, bank_id: str, document_ids: Iterable[str], status: str, error: str | None = None,
                   retryable: bool | None = None) -> None:
        ids = list(document_ids)
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            self.db.execute(
                "UPDATE documents SET status = ?, error = ?, retryable = ?, updated_at = ? WHERE bank_id = ? "
                f"AND document_id IN ({', '.join('?' * len(part))})",
                [status, error, retryable, _now(), bank_id, *part],
            )

    def documents(self, statuses: Iterable[str] | None = None) -> list[DocumentRow]:
        """Documents the ledger planned to deliver (all of them, or those in ``statuses``)."""
        wanted = list(statuses) if statuses is not None else None
        where = f"WHERE status IN ({', '.join('?' * len(wanted))}) " if wanted else ""
        rows = self.db.execute(
            f"SELECT {_DOCUMENT_COLUMNS} FROM documents {where}ORDER BY bank_id, document_id", wanted or []
        ).fetchall()
        return [_document_row(r) for r in rows]

    def documents_by_id(self, bank_id: str, document_ids: list[str]) -> list[DocumentRow]:
        found: list[DocumentRow] = []
        for start in range(0, len(document_ids), _BATCH):
            part = document_ids[start : start + _BATCH]
            rows = self.db.execute(
                f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE bank_id = ? AND document_id IN "
                f"({', '.join('?' * len(part))})", [bank_id, *part]
            ).fetchall()
            found += [_document_row(r) for r in rows]
        return found

    def open_operations(self, statuses: tuple[str, ...] = ("sent",)) -> dict[tuple[str, str], list[str]]:
        """(bank, operation) -> documents in ``statuses`` (default ``sent``: accepted by the server, not yet seen
        to complete)."""
        rows = self.db.execute(
            "SELECT bank_id, operation_id, document_id FROM documents "
            f"WHERE status IN ({', '.join('?' * len(statuses))}) AND operation_id IS NOT NULL", list(statuses)
        ).fetchall()
        result: dict[tuple[str, str], list[str]] = {}
        for bank_id, op, doc in rows:
            result.setdefault((bank_id, op), []).append(doc)
        return result

    def documents_by_status(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT status, count(*) FROM documents GROUP BY status").fetchall())

    def known_sessions(self) -> set[str]:
        rows = self.db.execute("SELECT session_id FROM sources UNION SELECT session_id FROM documents").fetchall()
        return {r[0] for r in rows if r[0]}

    def planned_document_ids(self) -> dict[str, set[tuple[str, str]]]:
        """session id -> (bank, document) of the current plan: the manifest rows of the run that last read each
        source."""
        rows = self.db.execute(
            "SELECT s.session_id, m.bank_id, m.document_id FROM manifest m JOIN sources s "
            "ON m.run_id = s.last_run_id AND m.source_file = s.path WHERE m.document_id IS NOT NULL"
        ).fetchall()
        result: dict[str, set[tuple[str, str]]] = {}
        for session, bank, doc in rows:
            result.setdefault(session, set()).add((bank, doc))
        return result

    def run_deliveries(self, run_id: str) -> list[Delivery]:
        """Every document ``run_id`` sent, and whether another run wrote it too; ledgers from
        before the ``deliveries`` table fall back to the run that last wrote each document."""
        rows = self.db.execute(
            "SELECT d.bank_id, d.document_id, bool_or(o.run_id IS NOT NULL) FROM "
            "(SELECT DISTINCT bank_id, document_id FROM deliveries WHERE run_id = ? UNION "
            " SELECT bank_id, document_id FROM documents WHERE run_id = ?) d "
            "LEFT JOIN deliveries o ON o.bank_id = d.bank_id AND o.document_id = d.document_id AND o.run_id <> ? "
            "GROUP BY 1, 2 ORDER BY 1, 2", [run_id, run_id, run_id]
        ).fetchall()
        return [Delivery(r[0], r[1], bool(r[2])) for r in rows]
