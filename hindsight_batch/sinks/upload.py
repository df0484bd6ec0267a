"""The upload sink: batches planned items per bank and sends them through the ledger (S4, S5).

Each document moves ``pending`` (recorded before its request leaves) -> ``sent`` (the server accepted the async
request; the ledger keeps its operation id) -> ``confirmed`` (the server holds it with our ``content_hash``) or
``missing`` (its operation ended but the server does not hold it: sent again by the next run) or ``failed`` (with
the server's detail; ``retryable`` when the server was in trouble rather than refusing the item). A request never
holds two items with the same ``document_id``; its ``operation_id`` is a uuid5 of the bank, the item hashes and
each document's send attempt (kept in the ledger), so a request retried after a crash is a no-op on the server,
while a deliberate resend (the server lost the document, or ``forget`` deleted it) is a new request. A request
refused with a 4xx is split in halves until the refused items are alone, so one bad item never keeps the others
from the server. Requests run in a small thread pool; the ledger is written from the calling thread only.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from hindsight_batch.base.masking import mask
from hindsight_batch.base.polling import Backoff, poll
from hindsight_batch.config.model import Upload
from hindsight_batch.ledger import DocumentRow, Ledger
from hindsight_batch.sinks import hindsight as hindsight_api
from hindsight_batch.sinks.hindsight import HindsightClient, RequestRejected, RetainAccepted

OPERATION_NAMESPACE = uuid.UUID("5d9c7f3e-6a51-4c0e-9f0b-8c1d2e3f4a5b")
TERMINAL = {"completed", "failed", "cancelled", "not_found"}
OPERATION_POLL = Backoff(first=0.5, factor=1.5, cap=5.0)  # asking the server whether accepted requests are done


def operation_id(bank_id: str, keys: list[str], namespace: uuid.UUID = OPERATION_NAMESPACE) -> str:
    """The same request (bank and item keys, in any order) always gets the same id: a retry is a no-op."""
    return str(uuid.uuid5(namespace, bank_id + "\n" + "\n".join(sorted(keys))))


def attempt_key(item_hash: str, attempt: int) -> str:
    """An item's part of its request's operation id: the first attempt keeps the bare item hash (the ids of
    requests left open by earlier versions stay the same), a resend adds its attempt number."""
    return item_hash if attempt == 0 else f"{item_hash}#{attempt}"


# Fault injection for the crash tests: the process kills itself at this point of the first request.
_CRASH_AT = os.environ.get("HINDSIGHT_BATCH_CRASH_AT", "")


def _crash_point(name: str) -> None:
    if name == _CRASH_AT:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class _Batch:
    rows: list[DocumentRow] = field(default_factory=list)
    payloads: list[dict[str, object]] = field(default_factory=list)
    size: int = 0


@dataclass
class UploadStats:
    statuses: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    errors: list[str] = field(default_factory=list)

    def error(self, message: str) -> None:
        if len(self.errors) < 50:
            self.errors.append(message)


class Uploader:
    def __init__(self, client: HindsightClient, ledger: Ledger, run_id: str, settings: Upload,
                 sleep: Callable[[float], None] | None = None) -> None:
        self._client = client
        self._ledger = ledger
        self._run_id = run_id
        self._settings = settings
        self._sleep = sleep or (lambda seconds: hindsight_api.pause(seconds))  # tests replace `pause`
        self._batches: dict[str, _Batch] = {}
        self._pool = ThreadPoolExecutor(max_workers=settings.in_flight, thread_name_prefix="upload")
        self._inflight: dict[Future[RetainAccepted], tuple[str, str, _Batch]] = {}
        self._operations: dict[tuple[str, str], list[str]] = {}
        self.stats = UploadStats()
        self.changed: Callable[[], None] | None = None  # told when items are sent, confirmed or failed (the bar)

    def add(self, row: DocumentRow, payload: dict[str, object], size: int) -> None:
        batch = self._batches.setdefault(row.bank_id, _Batch())
        full = len(batch.rows) >= self._settings.batch_items or (
            batch.rows and batch.size + size > self._settings.batch_bytes
        )
        if full or any(r.document_id == row.document_id for r in batch.rows):
            self._flush(row.bank_id)
            batch = self._batches.setdefault(row.bank_id, _Batch())
        batch.rows.append(row)
        batch.payloads.append(payload)
        batch.size += size

    def _flush(self, bank_id: str) -> None:
        batch = self._batches.pop(bank_id, None)
        if batch and batch.rows:
            self._submit(bank_id, batch)

    def _submit(self, bank_id: str, batch: _Batch) -> None:
        attempts = self._ledger.send_attempts(bank_id, batch.rows)
        op = operation_id(bank_id, [attempt_key(r.item_hash, attempts[r.document_id]) for r in batch.rows])
        self._ledger.mark_pending(batch.rows, op, self._run_id, attempts)
        _crash_point("pending")
        while len(self._inflight) >= self._settings.in_flight:
            self._collect(block=True)
        future = self._pool.submit(self._client.retain, bank_id, batch.payloads, op)
        self._inflight[future] = (bank_id, op, batch)
        self.stats.requests += 1

    def _collect(self, block: bool) -> None:
        if not self._inflight:
            return
        done, _ = wait(list(self._inflight), timeout=None if block else 0, return_when=FIRST_COMPLETED)
        for future in done:
            if future not in self._inflight:
                continue  # already collected while a split batch waited for room (this method re-enters)
            bank_id, op, batch = self._inflight.pop(future)
            rows = batch.rows
            ids = [r.document_id for r in rows]
            try:
                accepted = future.result()
            except RequestRejected as exc:
                if not exc.retryable and len(rows) > 1:
                    self._split(bank_id, batch)  # the server names one problem per request: find each item
                    continue
                self._ledger.set_status(bank_id, ids, "failed", str(exc), retryable=exc.retryable)
                self.stats.statuses["failed"] += len(rows)
                self.stats.error(f"{bank_id}: {len(rows)} item(s) failed: {exc}"
                                 + (f" ({ids[0]})" if len(ids) == 1 else ""))
                self._changed()
                continue
            except BaseException:
                self._abort()
                raise
            _crash_point("sent")
            self._ledger.set_status(bank_id, ids, "sent")
            self.stats.statuses["sent"] += len(rows)
            self._operations[(bank_id, accepted.operation_id or op)] = ids
            self._changed()

    def _changed(self) -> None:
        if self.changed is not None:
            self.changed()

    def _split(self, bank_id: str, batch: _Batch) -> None:
        half = len(batch.rows) // 2
        for part in (slice(0, half), slice(half, None)):
            self._submit(bank_id, _Batch(batch.rows[part], batch.payloads[part]))

    def _abort(self) -> None:
        for future in self._inflight:
            future.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def finish(self) -> None:
        for bank_id in list(self._batches):
            self._flush(bank_id)
        while self._inflight:
            self._collect(block=True)
        self._pool.shutdown(wait=True)

    def wait_for_operations(self, timeout: float, sleep: Callable[[float], None] | None = None) -> int:
        """Poll every operation still open in the ledger (this run's, and those an interrupted run left) until it
        ends or ``timeout`` passes; a completed one confirms only the documents the server holds with our content
        hash. Return how many operations are still open."""
        open_ops = {**self._ledger.open_operations(), **self._operations}

        def settled() -> bool:
            for (bank_id, op), ids in list(open_ops.items()):
                outcome = settle_operation(self._ledger, self._client, bank_id, op, ids)
                if outcome is None:
                    continue
                del open_ops[(bank_id, op)]
                if (bank_id, op) in self._operations:
                    self.stats.statuses["sent"] -= len(ids)  # counted as sent by this run; now settled
                self.stats.statuses.update(outcome.statuses)
                self.stats.errors.extend(outcome.errors[: 50 - len(self.stats.errors)])
                self._changed()
            return not open_ops

        poll(settled, OPERATION_POLL, deadline=time.monotonic() + timeout, sleep=sleep or self._sleep)
        return len(open_ops)


@dataclass
class Settled:
    statuses: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)


def settle_operation(ledger: Ledger, client: HindsightClient, bank_id: str, op: str, ids: list[str],
                     answer: dict[str, Any] | None = None) -> Settled | None:
    """Where the documents of one accepted request stand: None while the server still works on it; else each
    is ``confirmed`` (held with our content hash), ``missing`` (the operation completed, or the server lost it,
    and the document is not there: sent again by the next run) or ``failed`` (the operation failed: retryable)."""
    answer = client.operation(bank_id, op) if answer is None else answer
    status = str(answer.get("status"))
    if status not in TERMINAL:
        return None
    outcome = Settled()
    if status == "failed" or status == "cancelled":
        detail = mask(str(answer.get("error_message") or status))  # stored in the ledger
        ledger.set_status(bank_id, ids, "failed", f"operation {status}: {detail}", retryable=True)
        outcome.statuses["failed"] += len(ids)
        outcome.errors.append(f"{bank_id}: operation {op} {status}: {detail}")
        return outcome
    expected = {row.document_id: row.content_hash for row in ledger.documents_by_id(bank_id, ids)}
    held: list[str] = []
    missing: list[str] = []
    for doc_id in ids:
        doc = client.document(bank_id, doc_id)
        (held if doc is not None and doc.get("content_hash") == expected.get(doc_id) else missing).append(doc_id)
    ledger.set_status(bank_id, held, "confirmed")
    why = "the server does not know the operation" if status == "not_found" else "operation completed"
    ledger.set_status(bank_id, missing, "missing", f"{why}, but the server does not hold this content")
    outcome.statuses["confirmed"] += len(held)
    outcome.statuses["missing"] += len(missing)
    if missing:
        outcome.errors.append(f"{bank_id}: {len(missing)} document(s) not on the server after operation {op} "
                              f"({status}); the next run sends them again")
    return outcome


def reconcile(ledger: Ledger, client: HindsightClient) -> Counter[str]:
    """Before an applied run plans anything: settle what earlier runs left open, so this run resends what the
    server lost. Documents ``sent`` whose operation ended are confirmed or found missing (one request per open
    operation, one per document of a completed one, each document once); ``pending`` documents whose request
    reached the server before a crash become ``sent`` (not sent twice). Cheap when nothing is open."""
    counts: Counter[str] = Counter()
    for (bank_id, op), ids in ledger.open_operations(("sent", "pending")).items():
        answer = client.operation(bank_id, op)
        status = str(answer.get("status"))
        pending_ids = [row.document_id for row in ledger.documents_by_id(bank_id, ids) if row.status == "pending"]
        if status in ("pending", "processing", "completed") and pending_ids:
            ledger.set_status(bank_id, pending_ids, "sent")  # the request got there before the crash
            counts["sent"] += len(pending_ids)
        if status == "not_found" and pending_ids:
            ids = [i for i in ids if i not in pending_ids]  # never got there: stays pending, sent again
        if ids:
            outcome = settle_operation(ledger, client, bank_id, op, ids, answer)
            if outcome is not None:
                counts.update(outcome.statuses)
    return counts
