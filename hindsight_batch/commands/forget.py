"""Undo a run: find the documents one applied run wrote and delete them from the server (``forget --run``).

The ledger's ``deliveries`` table says which runs wrote each document. A document only this run wrote is deleted
(with ``--confirm``); one another run also wrote (a later re-send, an earlier import of the same window) is listed
and kept unless ``--force``. Each outcome is recorded in the ledger's ``forgotten`` table (``report`` shows it),
and a deleted document's status becomes ``forgotten``: a later ``import --apply`` with the same settings sends it
again, which is what a user who fixes the bank and re-runs wants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hindsight_batch.errors import UsageError
from hindsight_batch.ledger import Ledger
from hindsight_batch.sinks.hindsight import HindsightClient


@dataclass
class ForgetReport:
    run_id: str
    confirm: bool
    force: bool
    documents: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        result: dict[str, int] = {}
        for doc in self.documents:
            result[doc["action"]] = result.get(doc["action"], 0) + 1
        return result

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "confirm": self.confirm, "force": self.force, "counts": self.counts(),
                "documents": self.documents}


def forget_run(ledger: Ledger, client: HindsightClient, run_id: str, *, confirm: bool, force: bool,
               by_run: str) -> ForgetReport:
    if not ledger.has_run(run_id):
        raise UsageError(f"--run {run_id}: no such run in the ledger (see 'hindsight-batch report')")
    report = ForgetReport(run_id, confirm, force)
    outcomes: list[tuple[str, str, str]] = []
    for bank_id, doc_id, shared in ledger.run_deliveries(run_id):
        on_server = client.document(bank_id, doc_id) is not None
        if not on_server:
            action = "already-gone"
        elif shared and not force:
            action = "kept-shared"
        elif not confirm:
            action = "would-delete"
        else:
            action = "deleted" if client.delete_document(bank_id, doc_id) else "already-gone"
        report.documents.append({"bank_id": bank_id, "document_id": doc_id, "also_written_by_another_run": shared,
                                 "action": action})
        if confirm:
            outcomes.append((bank_id, doc_id, action))
            if action in ("deleted", "already-gone"):
                ledger.set_status(bank_id, [doc_id], "forgotten", f"forget --run {run_id} ({by_run})")
    if confirm:
        ledger.record_forgotten(run_id, outcomes, by_run)
    return report
