"""Drain retain queues to the server: ``hindsight-batch flush``.

Queued records already carry their bank and are not routed again, but the safety rules are checked again: a
record holding recalled memory (S1) or a secret (S3) goes to the dead-letter file with the reason, never to the
server. Everything else is sent in batches (async, with a deterministic ``operation_id``, never two items for
one document in a request; a later job for a document already sent waits for that request to be processed, so
appends land in order). A job leaves the queue only after the server accepted it (S5); a job that fails is kept
with ``retries`` and ``lastError`` and goes to the dead-letter file after five failures. The queue is rewritten
atomically, only while holding the extension's own lock.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight_batch.base.polling import Backoff, poll
from hindsight_batch.config.model import Upload
from hindsight_batch.errors import BusyError, HindsightBatchError, without_surrogates
from hindsight_batch.queue.store import (
    MAX_RETRIES,
    Job,
    QueueLock,
    append_lines,
    clean_text,
    now_iso,
    read_queue,
    rewrite_queue,
    side_file,
)
from hindsight_batch.redaction.messages import failure_reason
from hindsight_batch.redaction.redactor import Findings, Redactor
from hindsight_batch.retention import memory_filter as mf
from hindsight_batch.sinks.hindsight import HindsightClient, RequestRejected
from hindsight_batch.sinks.upload import TERMINAL, operation_id

FLUSH_NAMESPACE = uuid.UUID("8b0f2d1e-39a4-4c51-9e27-5a6f0c3d2b18")
FLUSH_POLL = Backoff(first=0.2, factor=1.5, cap=3.0)  # waiting for a document's earlier request to be processed
# The longest flush waits for one such request, without --max-seconds: a server that says "processing" for ever
# must not hang a cron job; the jobs stay queued for the next flush.
MAX_WAIT_SECONDS = 600.0


@dataclass
class FlushReport:
    queue: str
    jobs: int = 0
    sent: int = 0
    would_send: int = 0
    retry_later: int = 0
    dead_lettered: int = 0
    quarantined: int = 0
    surrogates_replaced: int = 0
    left: int = 0
    busy: bool = False
    failed: bool = False  # the queue could not be read or rewritten (see errors)
    stopped_early: bool = False
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def unsafe_reason(job: Job, redactor: Redactor) -> str | None:
    """Why a queued record must never reach the server (S1, S3), or None."""
    content = str(job.item.get("content", ""))
    context = str(job.item.get("context", ""))
    if mf.starts_with_memory(content) or mf.excise_memory(content)[1] or mf.excise_memory(context)[1]:
        return "holds recalled memory (S1): never sent"
    findings = Findings()
    redactor.redact_text(content, findings)
    redactor.redact_text(context, findings)
    redactor.redact_value(job.item.get("metadata") or {}, findings)
    if findings:
        rules = ", ".join(f"{rule}×{n}" for rule, n in sorted(findings.counts.items()))
        return f"holds a secret ({rules}) (S3): never sent"
    return None


def _check_sendable(job: Job) -> None:
    """Raise if the item cannot be encoded as the request body (surrogates were replaced when it was read)."""
    json.dumps(job.item, ensure_ascii=False).encode("utf-8")


def _operation_id(bank: str, jobs: list[Job]) -> str:
    return operation_id(bank, [j.key for j in jobs], FLUSH_NAMESPACE)


class QueueFlusher:
    def __init__(
        self,
        client: HindsightClient | None,
        redactor: Redactor,
        settings: Upload,
        *,
        dry_run: bool = False,
        max_jobs: int | None = None,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._redactor = redactor
        self._settings = settings
        self._dry_run = dry_run
        self._budget = max_jobs
        self._deadline = deadline
        self._clock = clock
        self._sleep = sleep

    def flush(self, path: Path) -> FlushReport:
        report = FlushReport(str(path))
        lock = QueueLock(path)
        try:
            if not self._dry_run:
                try:
                    lock.acquire()
                except BusyError as exc:
                    report.busy = True
                    report.errors.append(str(exc))
                    return report
            self._flush_locked(path, report, lock)
        except HindsightBatchError:
            raise  # the server refused our credentials or cannot be reached: every queue would fail alike
        except Exception as exc:  # this queue only (unreadable, its folder unwritable): the others are flushed
            report.failed = True
            report.errors.append(f"queue not flushed: {failure_reason(exc)}")
        finally:
            lock.release()
        return report

    def _flush_locked(self, path: Path, report: FlushReport, lock: QueueLock) -> None:
        contents = read_queue(path)
        report.jobs = len(contents.jobs)
        report.quarantined = len(contents.malformed)
        remaining: list[Job] = []
        dead: list[dict[str, Any]] = []
        for job in contents.jobs:
            report.surrogates_replaced += job.surrogates
            try:  # one job that breaks a check is dead-lettered; it never stops the queue
                reason = unsafe_reason(job, self._redactor)
                if reason is None:
                    _check_sendable(job)
            except HindsightBatchError:
                raise
            except Exception as exc:
                reason = f"could not be checked or encoded: {failure_reason(exc)}"
            if reason:
                dead.append(self._dead_record(job, reason))
            else:
                remaining.append(job)
        report.dead_lettered += len(dead)
        if self._dry_run:
            report.would_send = len(remaining) if self._budget is None else min(len(remaining), self._budget)
            report.left = report.jobs - len(dead)
            return
        # Side files first, then the queue: a kill in between leaves a job in both, never in neither (S5).
        append_lines(side_file(path, "malformed"), [self._quarantine_record(path, line, why)
                                                     for line, why in contents.malformed])
        self._dead_letter(path, dead)
        rewrite_queue(path, [j.line for j in remaining])
        self._send(path, remaining, report, lock)

    def _redacted(self, text: str) -> str:
        return self._redactor.redact_text(without_surrogates(text)[0], Findings())

    def _quarantine_record(self, path: Path, line: bytes, why: str) -> dict[str, Any]:
        """A line that is not a job, kept for a person to look at: as text, redacted like everything written (the
        text of a line that is not even JSON may still hold a pasted key)."""
        return {"quarantinedAt": now_iso(), "sourceQueue": str(path),
                "line": self._redacted(line.decode("utf-8", "replace")), "reason": self._redacted(why)}

    def _dead_record(self, job: Job, reason: str) -> dict[str, Any]:
        """The job as queued, redacted (the file stays on this machine, but no secret is written anywhere), with
        why it will not be sent."""
        record: dict[str, Any]
        try:
            raw, _ = clean_text(job.raw)
            record = dict(self._redactor.redact_value(raw, Findings()))
            json.dumps(record, ensure_ascii=False).encode("utf-8")
        except Exception:  # a record that cannot be rebuilt is kept as its redacted line
            record = {"line": self._redacted(job.line.decode("utf-8", "replace"))}
        # A job of the layout without ids is known by a hash of its line, which may hold the secret it was
        # refused for: a hash of a line otherwise written here would let a guess be checked. The record is known
        # by a hash of its redacted line instead (still the same across runs, for append_lines).
        own_id = isinstance(job.raw.get("id"), str) and job.raw["id"]
        redacted_line = self._redacted(job.line.decode("utf-8", "replace"))
        line_key = "line-sha256:" + hashlib.sha256(redacted_line.encode()).hexdigest()[:32]
        record["id"] = job.key if own_id else line_key + (f"#{job.repeat + 1}" if job.repeat else "")
        record["deadLetteredAt"] = now_iso()
        record["lastError"] = self._redacted(reason)
        return record

    def _dead_letter(self, path: Path, records: list[dict[str, Any]]) -> None:
        append_lines(side_file(path, "dead"), records)

    def _out_of_time(self) -> bool:
        return self._deadline is not None and self._clock() >= self._deadline

    def _send(self, path: Path, jobs: list[Job], report: FlushReport, lock: QueueLock) -> None:
        assert self._client is not None
        in_file = list(jobs)  # what the queue file holds, in its order
        work = list(jobs)  # what this flush still tries
        open_ops: list[tuple[str, str]] = []
        sent_docs: set[tuple[str, str]] = set()
        alone: set[str] = set()  # jobs of a rejected request, tried again one per request
        while work:
            if self._out_of_time() or (self._budget is not None and self._budget <= 0):
                report.stopped_early = True
                break
            batch = self._next_batch(work, sent_docs, alone)
            if not batch:  # the head job's document is still being processed: wait, then go on in order
                if not self._wait(open_ops):
                    report.stopped_early = True  # still processing: the rest waits in the queue for the next flush
                    break
                open_ops.clear()
                sent_docs.clear()
                continue
            bank = batch[0].bank_id
            op = _operation_id(bank, batch)
            keys = {j.key for j in batch}
            try:
                self._client.retain(bank, [j.item for j in batch], op)
            except RequestRejected as exc:
                if len(batch) > 1 and exc.status < 500:
                    # The server refused the request for something in it: one bad job must not take the others
                    # with it, so each is sent on its own and only the one refused counts a failure.
                    alone.update(keys)
                    continue
                in_file = self._failed(path, in_file, batch, str(exc), report)
                # Later jobs for the same documents wait for the failed ones (appends stay in order).
                blocked = {(j.bank_id, j.document_id) for j in batch if j.document_id}
                work = [j for j in work if j.key not in keys and (j.bank_id, j.document_id) not in blocked]
                rewrite_queue(path, [j.line for j in in_file])
                continue
            report.sent += len(batch)
            if self._budget is not None:
                self._budget -= len(batch)
            open_ops.append((bank, op))
            sent_docs.update((bank, j.document_id) for j in batch if j.document_id)
            in_file = [j for j in in_file if j.key not in keys]
            work = [j for j in work if j.key not in keys]
            rewrite_queue(path, [j.line for j in in_file])  # accepted: only now does the job leave the queue
            lock.heartbeat()
        report.left = len(in_file)

    def _next_batch(self, queue: list[Job], sent_docs: set[tuple[str, str]], alone: set[str]) -> list[Job]:
        batch: list[Job] = []
        size = 0
        docs: set[str] = set()
        for job in queue:
            if batch and (job.bank_id != batch[0].bank_id or job.key in alone or batch[0].key in alone):
                break
            doc = job.document_id
            if doc and ((job.bank_id, doc) in sent_docs or doc in docs):
                break  # keep the queue's order for one document: stop the batch here
            length = len(str(job.item.get("content", ""))) + 1024
            if batch and (len(batch) >= self._settings.batch_items or size + length > self._settings.batch_bytes):
                break
            if self._budget is not None and len(batch) >= self._budget:
                break
            batch.append(job)
            size += length
            if doc:
                docs.add(doc)
        return batch

    def _wait(self, operations: list[tuple[str, str]]) -> bool:
        """Wait until the server has processed ``operations``; False when it has not by the deadline (or, without
        one, within :data:`MAX_WAIT_SECONDS`)."""
        client = self._client
        assert client is not None
        pending = list(operations)

        def processed() -> bool:
            pending[:] = [(bank, op) for bank, op in pending
                          if client.operation(bank, op).get("status") not in TERMINAL]
            return not pending

        limit = self._clock() + MAX_WAIT_SECONDS
        deadline = limit if self._deadline is None else min(self._deadline, limit)
        return poll(processed, FLUSH_POLL, deadline=deadline, clock=self._clock, sleep=self._sleep)

    def _failed(self, path: Path, in_file: list[Job], batch: list[Job], error: str,
                report: FlushReport) -> list[Job]:
        """Count a failure on each job of ``batch`` (kept in place), dead-lettering those out of retries."""
        failed = {j.key for j in batch}
        error = self._redacted(error)  # a server's detail may quote the content it refused
        dead: list[dict[str, Any]] = []
        kept: list[Job] = []
        for job in in_file:
            if job.key in failed:
                job.retries += 1
                if job.retries >= MAX_RETRIES:
                    dead.append(self._dead_record(job, f"{error}; retry limit reached, moved to dead-letter queue"))
                    continue
                job.raw = {**job.raw, "retries": job.retries, "lastError": error[:500]}
                job.line = json.dumps(job.raw, ensure_ascii=False, separators=(",", ":")).encode()
            kept.append(job)
        report.dead_lettered += len(dead)
        report.retry_later += len(batch) - len(dead)
        report.errors.append(f"{len(batch)} job(s) failed: {error[:300]}")
        self._dead_letter(path, dead)
        return kept
