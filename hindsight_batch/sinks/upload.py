"""The upload sink: batches planned items per bank and sends them through the ledger (S4, S5).

Each document moves ``pending`` (recorded before its request leaves) -> ``sent`` (the server accepted the async
request; the ledger keeps its operation id) -> ``confirmed`` (with ``--wait``, the operation completed) or
``failed`` (with the server's detail). A request never holds two items with the same ``document_id``; its
``operation_id`` is a uuid5 of the bank and the item hashes, so a request retried after a crash is a no-op on the
server. Requests run in a small thread pool; the ledger is written from the calling thread only.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from hindsight_batch.config.model import Upload
from hindsight_batch.masking import mask
from hindsight_batch.sinks.hindsight import HindsightClient, RequestRejected, RetainAccepted
from hindsight_batch.sinks.ledger import DocumentRow, Ledger

OPERATION_NAMESPACE = uuid.UUID("5d9c7f3e-6a51-4c0e-9f0b-8c1d2e3f4a5b")
TERMINAL = {"completed", "failed", "cancelled", "not_found"}


def operation_id(bank_id: str, keys: list[str], namespace: uuid.UUID = OPERATION_NAMESPACE) -> str:
    """The same request (bank and item keys, in any order) always gets the same id: a retry is a no-op."""
    return str(uuid.uuid5(namespace, bank_id + "\n" + "\n".join(sorted(keys))))


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
    def __init__(self, client: HindsightClient, ledger: Ledger, run_id: str, settings: Upload) -> None:
        self._client = client
        self._ledger = ledger
        self._run_id = run_id
        self._settings = settings
        self._batches: dict[str, _Batch] = {}
        self._pool = ThreadPoolExecutor(max_workers=settings.in_flight, thread_name_prefix="upload")
        self._inflight: dict[Future[RetainAccepted], tuple[str, str, list[DocumentRow]]] = {}
        self._operations: dict[tuple[str, str], list[str]] = {}
        self.stats = UploadStats()

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
        if not batch or not batch.rows:
            return
        op = operation_id(bank_id, [r.item_hash for r in batch.rows])
        self._ledger.mark_pending(batch.rows, op, self._run_id)
        while len(self._inflight) >= self._settings.in_flight:
            self._collect(block=True)
        future = self._pool.submit(self._client.retain, bank_id, batch.payloads, op)
        self._inflight[future] = (bank_id, op, batch.rows)
        self.stats.requests += 1

    def _collect(self, block: bool) -> None:
        if not self._inflight:
            return
        done, _ = wait(list(self._inflight), timeout=None if block else 0, return_when=FIRST_COMPLETED)
        for future in done:
            bank_id, op, rows = self._inflight.pop(future)
            ids = [r.document_id for r in rows]
            try:
                accepted = future.result()
            except RequestRejected as exc:
                self._ledger.set_status(bank_id, ids, "failed", str(exc))
                self.stats.statuses["failed"] += len(rows)
                self.stats.error(f"{bank_id}: {len(rows)} item(s) failed: {exc}")
                continue
            except BaseException:
                self._abort()
                raise
            self._ledger.set_status(bank_id, ids, "sent")
            self.stats.statuses["sent"] += len(rows)
            self._operations[(bank_id, accepted.operation_id or op)] = ids

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

    def wait_for_operations(self, timeout: float, sleep: Callable[[float], None] = time.sleep) -> int:
        """Poll every operation still open in the ledger (this run's, and those an interrupted run left) until it
        ends or ``timeout`` passes; return how many are still open."""
        open_ops = {**self._ledger.open_operations(), **self._operations}
        deadline = time.monotonic() + timeout
        delay = 0.5
        while open_ops and time.monotonic() < deadline:
            for (bank_id, op), ids in list(open_ops.items()):
                answer = self._client.operation(bank_id, op)
                status = str(answer.get("status"))
                if status not in TERMINAL:
                    continue
                del open_ops[(bank_id, op)]
                if (bank_id, op) in self._operations:
                    self.stats.statuses["sent"] -= len(ids)  # counted as sent by this run; now settled
                if status == "completed":
                    self._ledger.set_operation_status(bank_id, op, "confirmed")
                    self.stats.statuses["confirmed"] += len(ids)
                else:
                    detail = mask(str(answer.get("error_message") or status))  # stored in the ledger
                    self._ledger.set_operation_status(bank_id, op, "failed", f"operation {status}: {detail}")
                    self.stats.statuses["failed"] += len(ids)
                    self.stats.error(f"{bank_id}: operation {op} {status}: {detail}")
            if open_ops:
                sleep(delay)
                delay = min(delay * 1.5, 5.0)
        return len(open_ops)
