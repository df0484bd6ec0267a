"""Compare what the server holds with what the ledger planned to deliver.

Every document the ledger holds for the current plan is checked, whatever its status (pending, sent, failed,
missing, confirmed): the server must hold it with our ``content_hash`` (sha256 of the exact content sent), tags
and metadata. The report lists:
* missing: not on the server (when its operation is still queued, "pending" instead); the ledger marks it
  ``missing`` so that a plain re-run of ``import --apply`` sends it again;
* mismatched: present, but ``content_hash``, tags or metadata differ (also sent again by a re-run);
* stale: on the server in our namespace (``pi-import:``) for a session the ledger knows, but no longer in the
  current plan (windows that shrank away); ``import --apply --delete-stale`` removes them;
* extra: on the server in our namespace for a session unknown to this ledger (another machine's import).
A document found as planned is marked ``confirmed``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, TypedDict

from hindsight_batch.ledger import DocumentRow, Ledger
from hindsight_batch.sinks.hindsight import HindsightClient

ID_PREFIX = "pi-import:"
_OPEN = {"pending", "processing"}
# Statuses that say the ledger no longer wants the document on the server.
_GONE = ("forgotten", "stale-deleted")


class ServerDocument(TypedDict):
    bank_id: str
    document_id: str


class StaleDocument(ServerDocument):
    session_id: str


class UndeliveredDocument(ServerDocument):
    """A planned document the server does not hold (yet: ``pending`` while its operation is open)."""

    ledger_status: str


class MismatchedDocument(ServerDocument):
    fields: list[str]  # content_hash, tags, metadata: what differs


@dataclass
class VerifyReport:
    banks: list[str] = field(default_factory=list)
    checked: int = 0
    matching: int = 0
    missing: list[UndeliveredDocument] = field(default_factory=list)
    pending: list[UndeliveredDocument] = field(default_factory=list)
    mismatched: list[MismatchedDocument] = field(default_factory=list)
    stale: list[ServerDocument] = field(default_factory=list)
    extra: list[ServerDocument] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.pending or self.mismatched or self.stale or self.extra)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok, "banks": self.banks, "checked": self.checked, "matching": self.matching,
            "missing": self.missing, "pending": self.pending, "mismatched": self.mismatched, "stale": self.stale,
            "extra": self.extra,
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


def session_of(doc: dict[str, Any]) -> str:
    """The session a ``pi-import:`` document belongs to: its metadata, else its id."""
    metadata = doc.get("document_metadata") or {}
    if isinstance(metadata, dict) and metadata.get("session_id"):
        return str(metadata["session_id"])
    parts = str(doc.get("id")).split(":")
    return parts[1] if len(parts) > 1 else ""


class Planned:
    """What the ledger wants on the server: per bank, the current plan's documents, and who else is ours."""

    def __init__(self, ledger: Ledger, bank: str | None) -> None:
        plan = ledger.planned_document_ids()
        in_plan = {key for keys in plan.values() for key in keys}
        self.expected: dict[str, dict[str, DocumentRow]] = defaultdict(dict)
        for row in ledger.documents():
            if row.status in _GONE or (bank is not None and row.bank_id != bank):
                continue
            if (row.bank_id, row.document_id) in in_plan or row.session_id not in plan:
                self.expected[row.bank_id][row.document_id] = row
        self.in_plan = in_plan
        self.planned_sessions = set(plan)
        self.known_sessions = ledger.known_sessions()
        self.banks = sorted(self.expected if bank is None else {bank})

    def is_stale(self, bank_id: str, doc: dict[str, Any]) -> bool:
        doc_id = str(doc.get("id"))
        return (doc_id.startswith(ID_PREFIX) and doc_id not in self.expected.get(bank_id, {})
                and session_of(doc) in self.planned_sessions and (bank_id, doc_id) not in self.in_plan)


def stale_documents(ledger: Ledger, client: HindsightClient, bank: str | None = None) -> list[StaleDocument]:
    """The server's ``pi-import:`` documents of sessions this ledger planned that the current plan no longer has."""
    planned = Planned(ledger, bank)
    found: list[StaleDocument] = []
    for bank_id in planned.banks:
        for doc in client.documents(bank_id):
            if planned.is_stale(bank_id, doc):
                found.append({"bank_id": bank_id, "document_id": str(doc.get("id")), "session_id": session_of(doc)})
    return found


def verify(ledger: Ledger, client: HindsightClient, bank: str | None = None) -> VerifyReport:
    planned = Planned(ledger, bank)
    report = VerifyReport(banks=planned.banks)
    for bank_id in planned.banks:
        rows = planned.expected.get(bank_id, {})
        seen: set[str] = set()
        confirmed: list[str] = []
        for doc in client.documents(bank_id):
            doc_id = str(doc.get("id"))
            expected_row = rows.get(doc_id)
            if expected_row is None:
                if planned.is_stale(bank_id, doc):
                    report.stale.append({"bank_id": bank_id, "document_id": doc_id})
                elif doc_id.startswith(ID_PREFIX) and session_of(doc) not in planned.known_sessions:
                    report.extra.append({"bank_id": bank_id, "document_id": doc_id})
                continue
            seen.add(doc_id)
            report.checked += 1
            differences = _differences(expected_row, doc)
            if differences:
                report.mismatched.append({"bank_id": bank_id, "document_id": doc_id, "fields": differences})
                why = f"verify: differs on the server ({', '.join(differences)})"
                ledger.set_status(bank_id, [doc_id], "missing", why)
            else:
                report.matching += 1
                if expected_row.status != "confirmed":
                    confirmed.append(doc_id)
        ledger.set_status(bank_id, confirmed, "confirmed")
        for doc_id, row in sorted(rows.items()):
            if doc_id in seen:
                continue
            report.checked += 1
            entry: UndeliveredDocument = {"bank_id": bank_id, "document_id": doc_id, "ledger_status": row.status}
            status = client.operation(bank_id, row.operation_id).get("status") if row.operation_id else None
            if row.status in ("sent", "pending") and status in _OPEN:
                report.pending.append(entry)
                continue
            report.missing.append(entry)
            if row.status != "failed":  # a failed one keeps the server's detail (and whether to retry it)
                ledger.set_status(bank_id, [doc_id], "missing", "verify: not on the server")
    return report
