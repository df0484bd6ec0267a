"""The import pipeline: session files in, planned retain items and manifest rows out.

``Importer`` wires the parts together: :class:`~hindsight_batch.importing.selection.FileSelection` decides for each
file (skip, reuse an unchanged source's rows, or plan it); planning runs here or in worker processes
(:mod:`hindsight_batch.importing.workers`); the results go to the sinks, each behind a protocol of
:mod:`hindsight_batch.interfaces`: the manifest (:class:`ManifestSink`), the ledger in batches
(:class:`~hindsight_batch.importing.ledger_batch.LedgerBatch` over a :class:`LedgerSink`) and, with ``--apply``,
the upload (:class:`~hindsight_batch.importing.sending.Sending` to a :class:`DocumentSink`); the summary is
:mod:`hindsight_batch.importing.accounting`'s. The ledger is a :class:`RunLedger`: the run's record and what
earlier runs left are read and written through it.
"""

from __future__ import annotations

import functools
import gc
import itertools
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from hindsight_batch.config import ConfigResolver, Settings
from hindsight_batch.errors import HindsightBatchError, Terminated, interrupt_behind
from hindsight_batch.importing.accounting import Accounting, ImportSummary, RowTally
from hindsight_batch.importing.from_run import RE_PLAN, Reviewed
from hindsight_batch.importing.gc_pause import collections_between_files
from hindsight_batch.importing.ledger_batch import LedgerBatch
from hindsight_batch.importing.options import PipelineOptions
from hindsight_batch.importing.parallelism import auto_jobs
from hindsight_batch.importing.progress import Moved, ProgressBar, file_size, progress_bar
from hindsight_batch.importing.selection import FileSelection, Plan, Reuse, SessionJob, Verdict, header_text
from hindsight_batch.importing.sending import Applied, Sending, planned_status
from hindsight_batch.importing.shaping import settings_hash
from hindsight_batch.ledger import ReviewedSource, manifest_table
from hindsight_batch.plan.rows import SourceRecord
from hindsight_batch.retention.stagetimes import StageTimes
from hindsight_batch.sinks.manifest import ManifestWriter, encode_line

# What reads, plans and sends is imported when there is a file to plan: an import with nothing new to read (an
# empty folder, a catch-up re-run) starts without loading it (``python -X importtime``; scripts/bench.py).
if TYPE_CHECKING:
    from hindsight_batch.importing.workers import PlanOutcome, PlanTask
    from hindsight_batch.interfaces import DocumentSink, ManifestSink, RunLedger
    from hindsight_batch.plan.planning import SessionPlan
    from hindsight_batch.plan.rows import ManifestRow
    from hindsight_batch.redaction.redactor import Redactor

__all__ = ["ImportSummary", "Importer", "PipelineOptions", "new_run_id", "settings_hash"]


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]


class _Encoded(NamedTuple):
    """A planned session's rows, encoded (:meth:`Importer._encode`)."""

    lines: list[bytes]  # for the manifest file
    records: list[bytes]  # for the ledger (manifest_table.record_line)
    tallies: list[RowTally]  # for the summary
    items: set[tuple[str, str, str]]  # (document id, item hash, bank) of each row with a document: --from-run's check


if TYPE_CHECKING:
    from hindsight_batch.plan.planning import plan_session
else:  # loaded on first use (see the imports above); mypy checks calls against the real signature

    def plan_session(*args, **kwargs):
        """The planner."""
        from hindsight_batch.plan.planning import plan_session as plan

        return plan(*args, **kwargs)


class Importer:
    """Runs an import over many files: one ledger, one manifest, per-session configuration."""

    def __init__(
        self,
        resolver: ConfigResolver,
        ledger: RunLedger,
        options: PipelineOptions,
        files: list[Path],
        uploader_factory: Callable[[str], DocumentSink] | None = None,
        manifest: ManifestSink | None = None,
    ) -> None:
        """``manifest``: a sink the caller opened already (to report a bad path before any other work); by default
        a writer for ``options.manifest``. ``uploader_factory``: the document sink for this run's id (``--apply``)."""
        self.resolver = resolver
        self.ledger = ledger
        self.options = options
        self.files = files
        self.summary = ImportSummary(new_run_id(), "apply" if options.apply else "dry-run")
        self.accounting = Accounting(self.summary)
        self.manifest: ManifestSink = manifest or ManifestWriter(options.manifest)
        self._applied: Applied = {}  # what earlier runs sent, read when the run starts
        self.selection = FileSelection(resolver, ledger, options, self.summary, self.accounting, files,
                                       self._applied)
        self.uploader = uploader_factory(self.summary.run_id) if uploader_factory else None
        self.sending = Sending(self.uploader, self._applied) if self.uploader is not None else None
        self.batch = LedgerBatch(ledger, self.summary.run_id)
        self.times = StageTimes()
        self.redactors: dict[tuple[str, ...], Redactor] = {}
        self._key = ledger.fingerprint_key()
        self._reported: dict[Path, int] = {}  # --jobs: bytes of a file a worker said it has read, on the bar

    def _redactor(self, settings: Settings) -> Redactor:
        from hindsight_batch.redaction.redactor import Redactor

        hosts = tuple(settings.redaction.private_hosts)
        if hosts not in self.redactors:
            self.redactors[hosts] = Redactor(self._key, hosts)
        return self.redactors[hosts]

    def run(self) -> ImportSummary:
        """The import, recorded in the ledger as a run whatever ends it; the manifest is kept only when the run
        completed (``ok``, or ``partial`` with files that failed alone)."""
        summary = self.summary
        started = time.perf_counter()
        summary.manifest = str(self.options.manifest) if self.options.manifest else None
        summary.ledger = str(self.ledger.path)
        status = "failed"
        try:
            status = self._import()
        except (KeyboardInterrupt, Terminated):
            status = "interrupted"
            raise
        except RuntimeError as exc:  # a signal DuckDB turned into "Query interrupted" (errors.interrupt_behind)
            interrupt = interrupt_behind(exc)
            if interrupt is None:
                raise
            status = "interrupted"
            raise interrupt from None
        finally:
            failing = sys.exc_info()[1]  # the error or interrupt ending the run, if one is: nothing here hides it
            try:
                self.manifest.close(complete=status in ("ok", "partial"))
            except BaseException as exc:  # the manifest could not be completed (a full disk): the run failed
                status, failing = "failed", exc
            self._record_run(status, started, failing)
            if failing is not None and failing is not sys.exc_info()[1]:
                raise failing
        return summary

    def _import(self) -> str:
        """Every file selected, planned and sunk; the run's status (``ok``, or ``partial`` when files failed)."""
        summary, options = self.summary, self.options
        self.ledger.start_run(summary.run_id, "import", summary.mode)
        self._read_ledger()
        total = self._sizes_and_jobs()
        reviewed = options.reviewed
        if reviewed is not None and self.selection.review_settings_changed(reviewed, self.files):
            total = 0  # nothing is read: every source is refused
        still_open = 0
        with progress_bar(total=total, unit="B", unit_scale=True, disable=not options.progress,
                          desc="import", leave=False) as bar:
            with collections_between_files():
                if reviewed is not None and reviewed.configuration_changed:
                    pass  # every reviewed source is refused unread (reviewed.finish says so)
                elif summary.jobs > 1:
                    self._plan_in_workers(bar)
                else:
                    self._plan_here_one_by_one(bar)
            self.batch.flush()
            if self.sending is not None:  # the bar stays while the last requests go and --wait confirms
                still_open = self.sending.finish(bar if options.progress else None, options.wait,
                                                 options.wait_timeout)
        if self.sending is not None:
            summary.upload = self.sending.summary(still_open)
        if reviewed is not None:
            reviewed.finish(self.files)
            summary.from_run = reviewed.to_dict()
        return "partial" if summary.failed_files or (reviewed and reviewed.refused) else "ok"

    def _read_ledger(self) -> None:
        """What earlier runs read and sent (nothing to look up for an empty folder: a cron run's usual case)."""
        if not self.files:
            return
        self.selection.known.update(self.ledger.sources())
        self._applied.update(self.ledger.document_hashes())
        if self.options.reviewed is None and not self.options.include_content:  # (else nothing is reused)
            self.ledger.expect_reuse([key for key in map(str, self.files) if key in self.selection.known])

    def _sizes_and_jobs(self) -> int:
        """The files' total size, for the bar and for --jobs auto (neither: no stat here); the summary's jobs."""
        jobs = self.options.jobs
        total = sum(file_size(p) for p in self.files) if self.options.progress or jobs == "auto" else 0
        self.summary.jobs = auto_jobs(total, len(self.files)) if jobs == "auto" else jobs
        return total

    def _record_run(self, status: str, started: float, failing: BaseException | None) -> None:
        """The run's end in the ledger: its status, summary and failed files. A ledger that cannot take it does not
        hide what ended the run (its disk may be what failed: the run then shows as interrupted once its lock is
        free)."""
        summary = self.summary
        summary.seconds = time.perf_counter() - started
        summary.stage_seconds = {
            "read+parse": self.times.extra.get("read", 0.0),
            "filter+project": self.times.project,
            "redact": self.times.redact,
            "chunk+route": self.times.extra.get("chunk+route", 0.0),
            "manifest+ledger": self.times.extra.get("sink", 0.0),
        }
        try:
            if summary.failed_files:
                self.ledger.record_failed_files(summary.run_id, summary.failed_files)
            self.ledger.finish_run(summary.run_id, status, summary.to_dict())
        except Exception:
            if failing is None:
                raise

    def _plan_here_one_by_one(self, bar: ProgressBar) -> None:
        """Each file selected, planned in this process and finished, in file order."""
        for count, path in enumerate(self.files, 1):
            job = self._prepare(path)
            moved = Moved(bar) if self.options.progress else None
            if job is not None:
                try:
                    plan = self._plan_here(job, moved)
                except HindsightBatchError:
                    raise
                except Exception as exc:  # this file only: the run goes on (never a BaseException)
                    self.accounting.file_failed(path, exc)
                else:
                    self._finish(job, plan)
            if moved is not None:
                bar.update(file_size(path) - moved.done)
            self._show_upload(bar)
            if job is not None or count % 256 == 0:  # a reused or skipped file leaves next to nothing to collect
                gc.collect(0)

    def _plan_in_workers(self, bar: ProgressBar) -> None:
        """``--jobs N``: sessions planned in N worker processes, finished here in file order."""
        to_plan = self._to_plan_in_workers(bar)
        first = next(to_plan, None)
        if first is None:  # nothing new to plan (a catch-up re-run): neither the workers nor the planner load
            self.summary.jobs = 1  # (no worker process started: the summary does not claim any)
            return
        from hindsight_batch.importing.workers import run_in_workers

        self._reported = {}
        run_in_workers(self.summary.jobs, itertools.chain((first,), to_plan), self._task_for,
                       functools.partial(self._planned_in_worker, bar),
                       functools.partial(self._read_in_worker, bar) if self.options.progress else None)

    def _to_plan_in_workers(self, bar: ProgressBar) -> Iterator[SessionJob]:
        """The files to plan, selected one by one as the workers take them (the others move the bar at once)."""
        for path in self.files:
            job = self._prepare(path, hash_here=False)  # hashed in the worker (_task_for)
            if job is not None:
                yield job
            elif self.options.progress:
                bar.update(file_size(path))

    def _task_for(self, job: SessionJob) -> PlanTask:
        from hindsight_batch.importing.workers import PlanTask

        return PlanTask(job.path, job.header, job.settings, self._key, self.summary.run_id,
                        self.options.include_content, job.handled, hash_file=not job.sha256,
                        keep_items=self.uploader is not None)

    def _read_in_worker(self, bar: ProgressBar, job: SessionJob, offset: int) -> None:
        """A worker has read ``offset`` bytes of ``job``'s file: the bar moves."""
        offset = min(offset, job.size)  # a file still growing counts what it was when the run began
        if offset > self._reported.get(job.path, 0):
            bar.update(offset - self._reported.get(job.path, 0))
            self._reported[job.path] = offset

    def _planned_in_worker(self, bar: ProgressBar, job: SessionJob, outcome: PlanOutcome | BaseException) -> None:
        """A worker's plan of ``job`` (or what failed that file), finished here in file order."""
        if isinstance(outcome, BaseException):
            self.accounting.file_failed(job.path, outcome)
        else:
            self.times.add(outcome[1])
            self._finish(job if outcome[2] is None else job._replace(sha256=outcome[2]), outcome[0])
        bar.update(job.size - self._reported.pop(job.path, 0))
        self._show_upload(bar)

    def _prepare(self, path: Path, hash_here: bool = True) -> SessionJob | None:
        """What is left to plan of ``path``, or None: a skipped file's manifest row or a reused source's rows are
        sunk here. Anything that fails on this file while it is selected or sunk (it cannot be read, even at the
        header peek or when a reused source is hashed; a catch-up verdict that cannot be read; a manifest sink's
        error) is this file's failure."""
        try:
            return self._sink_unplanned(self.selection.select(path, hash_here))
        except HindsightBatchError:
            raise  # a configuration error stops the run (exit 3, naming the file and key), as S8 wants
        except Exception as exc:
            self.accounting.file_failed(path, exc)
            return None

    def _sink_unplanned(self, verdict: Verdict) -> SessionJob | None:
        """A reused source's rows to the manifest, the summary and the ledger's batch; a skipped file's row (a
        switch that covers it) to the manifest. The job of a file to plan."""
        if isinstance(verdict, Plan):
            return verdict.job
        if isinstance(verdict, Reuse):  # the ledger keeps the rows under the run that read the file
            self.manifest.write_lines(verdict.manifest_lines)
            self.accounting.tallies(verdict.tallies)
            self.batch.add_reused(verdict.header, None)  # kept even when hashing the file (below) fails
            self.batch.add_reused(None, verdict.reviewable())  # may read the file: its failure comes after its rows
        elif verdict.manifest_lines:
            self.manifest.write_lines(list(verdict.manifest_lines))
        return None

    def _plan_here(self, job: SessionJob, moved: Callable[[int], None] | None = None) -> SessionPlan:
        return plan_session(job.path, job.header, job.settings, self._redactor(job.settings), self.summary.run_id,
                            self.options.include_content, self.times, job.handled, moved)

    def _show_upload(self, bar: ProgressBar) -> None:
        """On --apply, the bar also says how many items were sent and how many the server confirmed."""
        if self.sending is not None and self.options.progress:
            self.sending.show_on(bar)

    def _finish(self, job: SessionJob, plan: SessionPlan) -> None:
        """A planned session into the summary, the manifest, the ledger's batch and the document sink."""
        t0 = time.perf_counter()
        try:  # everything that can fail on this file's data, before anything is written
            encoded = self._encode(job, plan)
            reviewed = self.options.reviewed
            if reviewed is not None and not self._as_reviewed(reviewed, job, encoded.items):
                return
            sizes = [len(planned.item.content.encode("utf-8")) for planned in plan.items]
        except Exception as exc:
            self.accounting.file_failed(job.path, exc)
            return
        self.accounting.session(plan)
        if plan.handled_note:
            self.summary.cursor_fallbacks.append({"file": job.name, "note": plan.handled_note})
        self.manifest.write_lines(encoded.lines)
        self.accounting.tallies(encoded.tallies)
        if self.sending is not None:
            sent = self.sending.send(plan, sizes)
            if self.options.reviewed is not None:
                self.options.reviewed.items_sent += sent
        # With --include-content the records hold the (redacted) text too: review shows it.
        source = SourceRecord(job.name, job.size, job.mtime_ns, job.header.id, job.shape, self.summary.run_id,
                              job.sha256, header_text(job.header))
        reviewable = None
        if not self.options.apply and job.sha256 is not None:
            reviewable = ReviewedSource(job.name, job.size, job.mtime_ns, job.sha256, job.shape, self.summary.run_id)
        self.batch.add_session(encoded.records, source, reviewable)
        self.times.extra["sink"] = self.times.extra.get("sink", 0.0) + time.perf_counter() - t0

    def _encode(self, job: SessionJob, plan: SessionPlan) -> _Encoded:
        """Each of the plan's rows once as JSON, with what the importer adds, encoded for the manifest file and for
        the ledger. The rows are let go one by one, so a session of many short messages never holds them in four
        forms at once (rows, JSON values, manifest lines, ledger records): docs/performance.md."""
        rows, plan.rows = plan.rows, []
        rows.reverse()  # popped from the end: in file order
        notes = dict(job.annotations or {})
        if plan.handled_note:
            notes["cursor"] = plan.handled_note
        encoded = _Encoded([], [], [], set())
        while rows:
            row = rows.pop()
            data = row.as_json(bank_why=job.bank_why, live_retained=job.live_retained, status=self._status(row))
            if notes:
                data.update(notes)
            encoded.lines.append(encode_line(data))  # text no UTF-8 file can hold (a lone surrogate) fails here
            encoded.records.append(manifest_table.record_line(data))
            encoded.tallies.append(RowTally.of(data))
            if self.options.reviewed is not None and data["document_id"]:
                encoded.items.add((data["document_id"], data["item_sha256"] or "", data["bank_id"] or ""))
        return encoded

    def _as_reviewed(self, reviewed: Reviewed, job: SessionJob, items: set[tuple[str, str, str]]) -> bool:
        """--from-run: whether the session, planned again, is exactly what was reviewed (the same items, and the
        file unchanged while it was read); else it is refused, by name, and nothing of it is sent."""
        seen = reviewed.items.get(job.name, set())
        try:
            stat = job.path.stat()
            unchanged = (stat.st_size, stat.st_mtime_ns) == (job.size, job.mtime_ns)
        except OSError:
            unchanged = False
        if not unchanged:
            reviewed.refuse(job.path, f"the file changed while it was read; {RE_PLAN}")
        elif items != seen:
            reviewed.refuse(job.path, f"the plan differs from the reviewed one ({len(items)} item(s) now, {len(seen)} "
                                      f"reviewed, {len(items - seen)} not reviewed); {RE_PLAN}")
        else:
            reviewed.accepted.add(job.name)
            reviewed.items_as_reviewed += len(items)
            return True
        return False

    def _status(self, row: ManifestRow) -> str:
        """A planned row whose item the server already holds, unchanged, is ``unchanged``."""
        if row.status != "planned":
            return row.status
        return planned_status(self._applied, row.bank_id, row.document_id, row.item_sha256)
