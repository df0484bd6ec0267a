"""Compare what the server holds with what the ledger says was sent.

For every bank the ledger has sent documents to, page through the server's documents and report:
* missing: sent (or confirmed) but not on the server; when its operation is still queued it is "pending" instead;
* mismatched: present, but ``content_hash`` (sha256 of the exact content sent), tags or metadata differ;
* extra: on the server in our id namespace (``pi-import:``) but unknown to the ledger.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from hindsight_batch.sinks.hindsight import HindsightClient
from hindsight_batch.sinks.ledger import DocumentRow, Ledger

ID_PREFIX = "pi-import:"
_OPEN = {"pending", "processing"}


@dataclass
class VerifyReport:
    banks: list[str] = field(default_factory=list)
    checked: int = 0
    matching: int = 0
    missing: list[dict[str, str]] = field(default_factory=list)
    pending: list[dict[str, str]] = field(default_factory=list)
    mismatched: list[dict[str, Any]] = field(default_factory=list)
    extra: list[dict[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.mismatched or self.extra)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok, "banks": self.banks, "checked": self.checked, "matching": self.matching,
            "missing": self.missing, "pending": self.pending, "mismatched": self.mismatched, "extra": self.extra,
        }


def _differences(row: DocumentRow, doc: dict[str, Any]) -> list[str]:
    found = []
    if doc.get("content_hash") != row.content_hash:
        found.append("content_hash")
    if sorted(doc.get("tags") or []) != sorted(row.tags):
        found.append("tags")
    if (doc.get("document_metadata") or {}) != row.metadata:
        found.append("metadata")
    return found


def verify(ledger: Ledger, client: HindsightClient, bank: str | None = None) -> VerifyReport:
    expected: dict[str, dict[str, DocumentRow]] = defaultdict(dict)
    for row in ledger.sent_documents():
        if bank is None or row.bank_id == bank:
            expected[row.bank_id][row.document_id] = row
    known = ledger.known_document_ids()
    report = VerifyReport(banks=sorted(expected))
    for bank_id, rows in sorted(expected.items()):
        seen: set[str] = set()
        for doc in client.documents(bank_id):
            doc_id = str(doc.get("id"))
            expected_row = rows.get(doc_id)
            if expected_row is None:
                if doc_id.startswith(ID_PREFIX) and (bank_id, doc_id) not in known:
                    report.extra.append({"bank_id": bank_id, "document_id": doc_id})
                continue
            seen.add(doc_id)
            report.checked += 1
            differences = _differences(expected_row, doc)
            if differences:
                report.mismatched.append({"bank_id": bank_id, "document_id": doc_id, "fields": differences})
            else:
                report.matching += 1
        for doc_id, row in sorted(rows.items()):
            if doc_id in seen:
                continue
            report.checked += 1
            entry = {"bank_id": bank_id, "document_id": doc_id}
            status = client.operation(bank_id, row.operation_id).get("status") if row.operation_id else None
            (report.pending if status in _OPEN else report.missing).append(entry)
    return report
