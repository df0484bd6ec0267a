"""The import pipeline: session files in, planned retain items and manifest rows out.

``Importer`` wires the collaborators together: the session files (filters,
:mod:`hindsight_batch.importing.duplicates`, catch-up and live checks, an unchanged source reused from the ledger),
planning (:func:`hindsight_batch.plan.planning.plan_session`, here or in worker processes:
:mod:`hindsight_batch.importing.progress`, :mod:`hindsight_batch.importing.workers`), the sinks (manifest, ledger
and, with ``--apply``, the upload) and the summary (:mod:`hindsight_batch.importing.accounting`).
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from hindsight_batch import __version__
from hindsight_batch.config import ConfigResolver, Settings
from hindsight_batch.errors import HindsightBatchError, Terminated, interrupt_behind
from hindsight_batch.extension.catchup import CatchUpVerdict, cursor_verdict
from hindsight_batch.extension.records import queued_ids
from hindsight_batch.extension.switches import LuxusSession, Switched, hpi_session, luxus_session, project_switch
from hindsight_batch.importing.accounting import Accounting, ImportSummary, RowTally
from hindsight_batch.importing.duplicates import SessionOwners
from hindsight_batch.importing.from_run import RE_PLAN, Reviewed, file_sha256
from hindsight_batch.importing.gc_pause import collections_between_files
from hindsight_batch.importing.parallelism import auto_jobs
from hindsight_batch.importing.progress import Moved, ProgressBar, file_size, progress_bar
from hindsight_batch.ledger import SETTLED, DocumentRow, Ledger, ReviewedSource, SourceState, manifest_table
from hindsight_batch.plan.banks import BankResolver, moved, project_name, with_project_bank
from hindsight_batch.plan.rows import SourceRecord, switched_row
from hindsight_batch.retention.stagetimes import StageTimes
from hindsight_batch.session.names import source_name
from hindsight_batch.sinks.manifest import ManifestWriter, encode_line, encode_lines

# What reads, plans and sends is imported when there is a file to plan: an import with nothing new to read (an
# empty folder, a catch-up re-run) starts without loading it (``python -X importtime``; scripts/bench.py).
if TYPE_CHECKING:
    from hindsight_batch.config import ResolvedConfig
    from hindsight_batch.importing.live import LiveCheck
    from hindsight_batch.importing.workers import PlanOutcome, PlanTask
    from hindsight_batch.plan.banks import BankChoice
    from hindsight_batch.plan.planning import SessionPlan
    from hindsight_batch.plan.rows import LiveNote, ManifestRow
    from hindsight_batch.redaction.redactor import Redactor
    from hindsight_batch.session.model import SessionHeader
    from hindsight_batch.sinks.upload import Uploader

__all__ = ["ImportSummary", "Importer", "PipelineOptions", "new_run_id", "settings_hash"]


@dataclass(frozen=True)
class PipelineOptions:
    manifest: Path | None = None
    include_content: bool = False
    since: datetime | None = None
    cwd_filter: str | None = None
    project_filter: str | None = None
    progress: bool = False
    apply: bool = False
    wait: bool = False
    wait_timeout: float = 600.0
    catch_up: bool = False
    max_seconds: float | None = None
    jobs: int | Literal["auto"] = 1  # session files planned at once, in worker processes when more than one
    live: LiveCheck | None = None  # the live-retained check (hindsight_batch/importing/live.py); None: not asked
    reviewed: Reviewed | None = None  # --apply --from-run: send exactly what this dry run planned (from_run.py)
    # What the user told the live extension (hindsight_batch/extension/switches.py): None means on for catch-up
    # (automatic retain), off for an import (a deliberate operation: seed 001's mode matrix allows import in every
    # mode), which still reports every session a switch covers.
    respect_switches: bool | None = None

    @property
    def switches_respected(self) -> bool:
        return self.catch_up if self.respect_switches is None else self.respect_switches


def settings_hash(settings: Settings) -> str:
    """Everything that shapes an import's output, plus the tool version: if it changes, a source is redone."""
    shaping = settings.model_dump(mode="json", by_alias=True, exclude={"api_key", "base_url", "upload",
                                                                          "path_map"})
    blob = json.dumps({"settings": shaping, "version": __version__}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]


class _Job(NamedTuple):
    """A session file that passed every check and is to be planned."""

    path: Path
    size: int
    mtime_ns: int
    header: SessionHeader
    settings: Settings
    shape: str  # settings hash the ledger keeps for the source
    handled: CatchUpVerdict | None
    bank_why: str  # how the project bank was chosen, on every manifest row
    live_retained: LiveNote | None = None  # what the live check found, on every manifest row
    sha256: str | None = None  # of the file's bytes, checked before planning
    annotations: dict[str, Any] | None = None  # a switch that covers the session, a cursor not used: on every row

    @property
    def name(self) -> str:
        """The file as the manifest, the ledger and the summary name it."""
        return source_name(self.path)


# What is read is written to the ledger in batches: at most this many manifest rows or sources, or this many
# seconds of work, wait (a killed run reads them again). Each batch costs DuckDB a few statements (~20 ms): a
# batch per 200 sources was a twentieth of an import of many small files.
FLUSH_ROWS = 2000
FLUSH_SOURCES = 1000
FLUSH_SECONDS = 5.0


class _Encoded(NamedTuple):
    """A planned session's rows, encoded (:meth:`Importer._encode`)."""

    lines: list[bytes]  # for the manifest file
    records: list[bytes]  # for the ledger (manifest_table.record_line)
    tallies: list[RowTally]  # for the summary
    items: set[tuple[str, str, str]]  # (document id, item hash, bank) of each row with a document: --from-run's check


Applied = dict[tuple[str, str], tuple[str, str]]  # (bank, document) -> (item hash, status) of documents sent


if TYPE_CHECKING:
    from hindsight_batch.plan.planning import plan_session
    from hindsight_batch.session.model import header_from_text, header_text
    from hindsight_batch.session.reader import peek_header
else:  # loaded on first use (see the imports above); mypy checks calls against the real signatures

    def header_from_text(*args, **kwargs):
        """A header from the ledger's text."""
        from hindsight_batch.session.model import header_from_text as from_text

        return from_text(*args, **kwargs)

    def header_text(*args, **kwargs):
        """A header as the ledger's text."""
        from hindsight_batch.session.model import header_text as text

        return text(*args, **kwargs)

    def peek_header(*args, **kwargs):
        """The reader's header peek."""
        from hindsight_batch.session.reader import peek_header as peek

        return peek(*args, **kwargs)

    def plan_session(*args, **kwargs):
        """The planner."""
        from hindsight_batch.plan.planning import plan_session as plan

        return plan(*args, **kwargs)


class Importer:
    """Runs an import over many files: one ledger, one manifest, per-session configuration."""

    def __init__(
        self,
        resolver: ConfigResolver,
        ledger: Ledger,
        options: PipelineOptions,
        files: list[Path],
        uploader_factory: Callable[[str], Uploader] | None = None,
        manifest: ManifestWriter | None = None,
    ) -> None:
        """``manifest``: a writer the caller opened already (to report a bad path before any other work);
        by default one for ``options.manifest``."""
        self.resolver = resolver
        self.banks = BankResolver(resolver.env)
        self._path_map = resolver.for_cwd(None).settings.path_map
        self.ledger = ledger
        self.options = options
        self.files = files
        self.summary = ImportSummary(new_run_id(), "apply" if options.apply else "dry-run")
        self.accounting = Accounting(self.summary)
        self.owners = SessionOwners(ledger.source_sessions, frozenset(map(source_name, files)))  # (resolved)
        self.manifest = manifest or ManifestWriter(options.manifest)
        self.uploader = uploader_factory(self.summary.run_id) if uploader_factory else None
        self._deadline = time.monotonic() + options.max_seconds if options.max_seconds is not None else None
        self._known: dict[str, SourceState] = {}
        self._applied: Applied = {}
        self._pending_records: list[bytes] = []  # manifest rows for the ledger (manifest_table.record_line)
        self._flush_due = time.monotonic() + FLUSH_SECONDS
        self._pending_sources: list[SourceRecord] = []
        self._pending_reviewable: list[ReviewedSource] = []  # a dry run's sources, for --from-run
        self._pending_headers: list[tuple[str, str]] = []  # (path, header) of reused sources recorded without one
        self.times = StageTimes()
        self.redactors: dict[tuple[str, ...], Redactor] = {}
        self._key = ledger.fingerprint_key()
        self._shaped: dict[tuple[int, str, tuple[str, ...]], tuple[object, Settings, str]] = {}
        self._project_switches: dict[str, Switched | None] = {}  # per cwd (hindsight_batch/extension/switches.py)
        self._meta_folders: dict[str, bool] = {}  # per cwd: whether pi-hindsight keeps session meta there

    def _redactor(self, settings: Settings) -> Redactor:
        from hindsight_batch.redaction.redactor import Redactor

        hosts = tuple(settings.redaction.private_hosts)
        if hosts not in self.redactors:
            self.redactors[hosts] = Redactor(self._key, hosts)
        return self.redactors[hosts]

    def run(self) -> ImportSummary:
        summary = self.summary
        started = time.perf_counter()
        summary.manifest = str(self.options.manifest) if self.options.manifest else None
        summary.ledger = str(self.ledger.path)
        status = "failed"
        try:
            self.ledger.start_run(summary.run_id, "import", summary.mode)
            if self.files:  # (nothing to look up for an empty folder: a cron run's usual case)
                self._known = self.ledger.sources()
                self._applied = self.ledger.document_hashes()
                if self.options.reviewed is None and not self.options.include_content:  # (else nothing is reused)
                    self.ledger.expect_reuse([key for key in map(str, self.files) if key in self._known])
            jobs = self.options.jobs
            # The files' sizes, for the bar and for --jobs auto (neither: no stat here).
            total = sum(file_size(p) for p in self.files) if self.options.progress or jobs == "auto" else 0
            summary.jobs = auto_jobs(total, len(self.files)) if jobs == "auto" else jobs
            reviewed = self.options.reviewed
            if reviewed is not None and self._configuration_changed(reviewed):
                total = 0  # nothing is read: every source is refused
            still_open = 0
            with progress_bar(total=total, unit="B", unit_scale=True, disable=not self.options.progress,
                              desc="import", leave=False) as bar:
                with collections_between_files():
                    if reviewed is not None and reviewed.configuration_changed:
                        pass  # every reviewed source is refused unread (reviewed.finish says so)
                    elif summary.jobs > 1:
                        self._plan_in_workers(bar)
                    else:
                        self._plan_here_one_by_one(bar)
                self._flush_ledger()
                if self.uploader is not None:  # the bar stays while the last requests go and --wait confirms
                    if self.options.progress:
                        self.uploader.changed = lambda: self._show_upload(bar, refresh=True)
                    self.uploader.finish()
                    if self.options.wait:
                        still_open = self.uploader.wait_for_operations(self.options.wait_timeout)
            if self.uploader is not None:
                stats = self.uploader.stats
                summary.upload = {
                    "requests": stats.requests,
                    "documents": dict(sorted((k, v) for k, v in stats.statuses.items() if v)),
                    "failed": stats.statuses["failed"] + stats.statuses["missing"],
                    "operations_still_open": still_open,
                    "errors": stats.errors,
                }
            if reviewed is not None:
                reviewed.finish(self.files)
                summary.from_run = reviewed.to_dict()
            status = "partial" if summary.failed_files or (reviewed and reviewed.refused) else "ok"
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
                # (the ledger's disk may be what failed: the run then shows as interrupted once its lock is free)
            if failing is not None and failing is not sys.exc_info()[1]:
                raise failing
        return summary

    def _plan_here_one_by_one(self, bar: ProgressBar) -> None:
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

        def prepared() -> Iterator[_Job]:
            for path in self.files:
                job = self._prepare(path, hash_here=False)  # hashed in the worker (task_for)
                if job is None:
                    if self.options.progress:
                        bar.update(file_size(path))
                else:
                    yield job

        to_plan = prepared()
        first = next(to_plan, None)
        if first is None:  # nothing new to plan (a catch-up re-run): neither the workers nor the planner load
            self.summary.jobs = 1  # (no worker process started: the summary does not claim any)
            return
        from hindsight_batch.importing.workers import PlanTask, run_in_workers

        def task_for(job: _Job) -> PlanTask:
            return PlanTask(job.path, job.header, job.settings, self._key, self.summary.run_id,
                            self.options.include_content, job.handled, hash_file=not job.sha256,
                            keep_items=self.uploader is not None)

        reported: dict[Path, int] = {}  # bytes of a file a worker said it has read, already on the bar

        def read(job: _Job, offset: int) -> None:
            offset = min(offset, job.size)  # a file still growing counts what it was when the run began
            if offset > reported.get(job.path, 0):
                bar.update(offset - reported.get(job.path, 0))
                reported[job.path] = offset

        def done(job: _Job, outcome: PlanOutcome | BaseException) -> None:
            if isinstance(outcome, BaseException):
                self.accounting.file_failed(job.path, outcome)
            else:
                self.times.add(outcome[1])
                self._finish(job if outcome[2] is None else job._replace(sha256=outcome[2]), outcome[0])
            bar.update(job.size - reported.pop(job.path, 0))
            self._show_upload(bar)

        run_in_workers(self.summary.jobs, itertools.chain((first,), to_plan), task_for, done,
                       read if self.options.progress else None)

    def _prepare(self, path: Path, hash_here: bool = True) -> _Job | None:
        """What is left to plan of ``path``, or None (:meth:`_job_for`); anything that fails on this file (it
        cannot be read, even at the header peek; a catch-up verdict that cannot be read) is this file's failure."""
        try:
            return self._job_for(path, hash_here)
        except HindsightBatchError:
            raise  # a configuration error stops the run (exit 3, naming the file and key), as S8 wants
        except Exception as exc:
            self.accounting.file_failed(path, exc)
            return None

    def _job_for(self, path: Path, hash_here: bool = True) -> _Job | None:
        """Everything before a session is planned: filters, duplicates, catch-up rules, an unchanged source (its
        rows are reused here). Returns what is left to plan, or None. ``hash_here``: the file's bytes are hashed
        now (else by the worker that plans it, before it reads the file)."""
        summary = self.summary
        summary.files += 1
        key = source_name(path)
        reviewed = self.options.reviewed
        sha256: str | None = None
        if reviewed is not None:  # a file that is not what the review saw is refused, never planned again
            problem = reviewed.changed(path)
            if problem is not None:
                reviewed.refuse(path, problem)
                return None
            sha256 = reviewed.sources[key].sha256
        stat = path.stat()
        previous = self._known.get(key)
        # An unchanged source's header as the ledger recorded it (a re-run over many files opens none of them);
        # else the file's own, peeked at. --from-run checks the file's bytes instead, so it reads them.
        recorded = self._recorded_header(previous, stat) if reviewed is None else None
        # A file that cannot be read (permissions, gone) fails here, alone (_prepare).
        header = recorded if recorded is not None else peek_header(path)
        if isinstance(header, str):
            self.accounting.not_a_session(path, stat.st_size, header)
            return None
        if not self._wanted(header, stat.st_mtime):
            summary.filtered_out += 1
            return None
        owner = self.owners.owner(header.id, key)
        if owner != key:
            summary.duplicates.append({"file": key, "same_session_as": owner})
            return None
        handled: CatchUpVerdict | None = None
        if self.options.catch_up and self._deadline is not None and time.monotonic() >= self._deadline:
            summary.stopped_early = True
            return None
        # The switches kept outside the session file (per project, pi-hindsight's session meta): before an unchanged
        # source is reused, since they change without the file changing.
        annotations: dict[str, Any] = {}
        luxus = self._luxus_session(header, path)
        switched = self._outside_switch(header, luxus)
        if switched is not None and self._switched(key, header, switched):
            return None
        if switched is not None:
            annotations["switch"] = switched.as_json()
        resolved, choice, shaped_settings = self._settings_for(header, path, luxus.tags)
        if shaped_settings is None or choice.bank_id is None:
            summary.sessions_skipped.append({"file": key, "reason": f"no project bank: {choice.skip}"})
            summary.without_bank.append({"file": key, "cwd": header.cwd or "", "reason": choice.skip or "",
                                         "fix": choice.fix or ""})
            return None
        if choice.unnamed:  # this tool's own bank, which no extension reads: planned and said; never sent
            summary.bank_unnamed.append({"file": key, "bank": choice.bank_id, "reason": choice.unnamed})
            if self.options.apply:
                summary.sessions_skipped.append({"file": key, "reason": f"not sent: {choice.unnamed}"})
                summary.without_bank.append({"file": key, "cwd": header.cwd or "", "reason": choice.unnamed,
                                             "fix": "--extension hpi|pi-hindsight, or a bank (bankId)"})
                return None
        settings, shape = shaped_settings
        bank_id = choice.bank_id

        def counted() -> None:  # a session that is imported (reused or read), not one a switch leaves out
            seen = summary.banks.setdefault(bank_id, {"sessions": 0, "why": choice.why})
            seen["sessions"] += 1
            summary.user_retain_modes.add(settings.user_retain.mode)
            summary.sessions += 1

        live = self.options.live
        if reviewed is not None and shape != reviewed.sources[key].settings_hash:
            counted()
            reviewed.refuse(path, f"the configuration changed since the review; {RE_PLAN}")
            return None
        if (
            reviewed is None
            and previous is not None
            and not self.options.include_content
            and (previous.size, previous.mtime_ns, previous.settings_hash) == (stat.st_size, stat.st_mtime_ns, shape)
        ):
            reused = self._reused(key, previous.last_run_id)  # None: the file is read again (see _reused)
            # An applied run re-reads a source that still has anything to send (e.g. after a kill).
            if reused is not None and not (self.options.apply and any(t.status == "planned" for t in reused[1])):
                counted()
                self.manifest.write_lines(reused[0])  # the ledger keeps the rows under the run that read the file
                self.accounting.tallies(reused[1])
                if recorded is None:  # recorded by a version that did not keep headers: the next run need not peek
                    self._pending_headers.append((key, header_text(header)))
                summary.unchanged_files += 1
                if not self.options.apply:  # what the review of this dry run saw: the source as last read
                    self._pending_reviewable.append(ReviewedSource(
                        key, stat.st_size, stat.st_mtime_ns, previous.sha256 or file_sha256(path), shape,
                        previous.last_run_id))
                return None
        # hindsight-pi's hindsight-meta entries live in the file: read once it is to be planned (an unchanged source
        # was judged when it was read).
        hpi = hpi_session(path)
        if hpi is not None and hpi.all_off:
            off = Switched("hpi-session", "hindsight-pi: /hindsight:toggle-retain turned retention off before "
                                          "every message of this session (hindsight-meta retained:false)")
            if self._switched(key, header, off):
                return None
            annotations["switch"] = off.as_json()
        elif hpi is not None and hpi.off:
            part = Switched("hpi-session", f"hindsight-pi: {len(hpi.off)} of {hpi.messages} message(s) were "
                                           "written while /hindsight:toggle-retain had retention off")
            self._switched(key, header, part, whole=False)
            if self.options.switches_respected:
                handled = CatchUpVerdict(True, switched_off=hpi.off)
            annotations["switch"] = part.as_json()
        if hpi is not None and hpi.tags:  # the session's tags, as message_end adds sessionTags(entries)
            settings = settings.model_copy(update={"constant_tags": [*settings.constant_tags, *hpi.tags]})
        if self.options.catch_up:
            cursor = cursor_verdict(header.cwd, path, self.resolver.env)
            handled = cursor._replace(switched_off=handled.switched_off if handled else frozenset())
            if cursor.note:
                summary.cursor_fallbacks.append({"file": key, "note": cursor.note})
                annotations["cursor"] = cursor.note
        counted()
        live_note: LiveNote | None = None
        if live is not None:  # asked only for a source that is read again (hindsight_batch/importing/live.py)
            decision = live.decide(settings.banks.project.bank_id or "", resolved.family, header.id, path, header.cwd)
            summary.live_retained[decision.decision] += 1
            summary.live_unchecked = summary.live_unchecked or live.problem
            live_note = decision.as_json()
            if decision.decision == "skip":
                summary.sessions_skipped.append({"file": key, "reason": decision.note})
                return None
            handled = decision.handled(handled)
        if live is None or live.mode != "include":
            handled = self._queued(key, header, path, handled, annotations)
        # The bytes' hash, for the next --from-run: read before planning reads the file (a change in between
        # makes the recorded hash stale, so that --from-run refuses the file: the safe side).
        if not sha256 and hash_here:
            sha256 = file_sha256(path)
        return _Job(path, stat.st_size, stat.st_mtime_ns, header, settings, shape, handled, choice.why, live_note,
                    sha256, annotations or None)

    def _luxus_session(self, header: SessionHeader, path: Path) -> LuxusSession:
        """pi-hindsight's session meta, looked for only in a project that has its folder (asked once per project
        and run: a catch-up re-run over many files must stay cheap)."""
        cwd = header.cwd or ""
        if cwd not in self._meta_folders:
            self._meta_folders[cwd] = bool(cwd) and (Path(cwd) / ".pi" / "hindsight" / "session-meta").is_dir()
        return luxus_session(header.cwd, path, self.resolver.env) if self._meta_folders[cwd] else LuxusSession(True)

    def _queued(self, key: str, header: SessionHeader, path: Path, handled: CatchUpVerdict | None,
                annotations: dict[str, Any]) -> CatchUpVerdict | None:
        """hindsight-pi's records still queued for this session (its last flush failed): ``flush`` sends them, so
        their entries are left out here (hindsight_batch/extension/records.py), and the queue is named."""
        queued = queued_ids(path, header.id, self.resolver.env)
        if queued is None or not (queued.ids or queued.unplaced):
            return handled
        note = (f"{len(queued.ids)} message(s) wait in hindsight-pi's queue {queued.path} (flush sends them): left "
                "out" + (f"; {queued.unplaced} queued record(s) match no entry" if queued.unplaced else ""))
        self.summary.queued_by_extension.append({"file": key, "queue": str(queued.path), "left_out": len(queued.ids),
                                                 "unplaced": queued.unplaced})
        annotations["queued"] = note
        base = handled or CatchUpVerdict(True)
        return base._replace(handled_ids=base.handled_ids | queued.ids)

    def _outside_switch(self, header: SessionHeader, luxus: LuxusSession) -> Switched | None:
        """The per-project switch, else pi-hindsight's session meta (its one-turn opt-out for catch-up alone: seed
        004 keeps it out of a historical import), that covers this whole session; or None."""
        key = header.cwd or ""
        if key not in self._project_switches:  # once per project and run, as its configuration is read
            resolved = self.resolver.for_cwd(header.cwd)
            self._project_switches[key] = project_switch(resolved, self.resolver.env, header.cwd)
        found = self._project_switches[key]
        if found is not None:
            return found
        if not luxus.retain:
            return Switched("luxus-session", luxus.reason or "pi-hindsight session meta")
        if not header.cwd and self.options.catch_up:  # its session meta and cursor live under the cwd (S8)
            return Switched("luxus-session", "no cwd in the session header: its session meta cannot be found "
                                             "(fail closed)")
        if luxus.next_off and self.options.catch_up:
            # memory-lifecycle-retain.ts: a pending nextRetainMode "off" skips the next completed agent run, which
            # is the one after the cursor: not retained automatically (fail closed).
            return Switched("luxus-session", "pi-hindsight: a pending /hindsight:next-opt-out (nextRetainMode off)")
        return None

    def _switched(self, key: str, header: SessionHeader, switched: Switched, whole: bool = True) -> bool:
        """A session a switch covers, reported (summary; with the switches respected and the whole session covered,
        one manifest row with its id and the reason, never its text). Whether the session is left out."""
        respected = self.options.switches_respected
        self.summary.switched_off.append({"file": key, "session_id": header.id, **switched.as_json(),
                                          "whole_session": whole, "respected": respected})
        if not (whole and respected):
            return False
        self.manifest.write_lines([encode_line(switched_row(self.summary.run_id, key, header.id, switched))])
        return True

    @staticmethod
    def _recorded_header(previous: SourceState | None, stat: os.stat_result) -> SessionHeader | None:
        """The header the ledger recorded for a source whose size and modification time are those recorded: the
        test by which its rows are reused unread. None: the file is to be peeked at."""
        if previous is None or (previous.size, previous.mtime_ns) != (stat.st_size, stat.st_mtime_ns):
            return None
        return header_from_text(previous.header)

    def _settings_for(self, header: SessionHeader, path: Path, session_tags: tuple[str, ...] = ()
                      ) -> tuple[ResolvedConfig, BankChoice, tuple[Settings, str] | None]:
        """The session's configuration, bank choice and (when it has a bank) its settings and their hash with this
        run's suffixes, as the ledger keeps it for the source. ``session_tags`` (pi-hindsight's session meta) are
        added to the items' tags, as its retain adds ``extraTags: sessionMemory.tags``."""
        cwd = header.cwd
        now = moved(cwd, self._path_map) if cwd and self._path_map else None
        if now is not None:  # --map OLD=NEW: the bank and the project's configuration where the repository is now
            cwd = now
        resolved = self.resolver.for_cwd(cwd)
        settings = resolved.settings
        project = project_name(settings, header.cwd)
        choice = self.banks.choose(resolved, cwd, project, header.id, path)
        if now is not None:
            choice = choice._replace(why=f"{choice.why} (cwd {header.cwd} read as {now}: --map)")
        if choice.bank_id is None:
            return resolved, choice, None
        tags = self.banks.family_tags(resolved, cwd, choice.found)
        # The settings and their hash once per (configuration, bank, tags), not per file: many sessions share them.
        shaped = self._shaped.get((id(resolved), choice.bank_id, tuple(tags)))
        if shaped is None or shaped[0] is not resolved:
            settings = with_project_bank(settings, choice.bank_id, tags)
            shaped = (resolved, settings, settings_hash(settings))
            self._shaped[(id(resolved), choice.bank_id, tuple(tags))] = shaped
        settings, digest = shaped[1], shaped[2]
        if session_tags:
            settings = settings.model_copy(update={"constant_tags": [*settings.constant_tags, *session_tags]})
            digest = settings_hash(settings)
        shape = digest + (":catch-up" if self.options.catch_up else "")
        shape += f":live-{self.options.live.mode}" if self.options.live is not None else ""
        shape += ":switches" if self.options.switches_respected else ""
        return resolved, choice, (settings, shape)

    def _configuration_changed(self, reviewed: Reviewed) -> bool:
        """--from-run: whether any source's settings differ from the review's; then every source is refused
        (nothing is sent: the review was of another configuration)."""
        changed: list[str] = []
        for path in self.files:
            try:
                header = peek_header(path)
            except OSError:
                continue  # refused by name when it is reached
            if isinstance(header, str):
                continue
            _, _, shaped = self._settings_for(header, path, self._luxus_session(header, path).tags)
            name = source_name(path)
            if shaped is None or shaped[1] != reviewed.sources[name].settings_hash:
                changed.append(name)
        if changed:
            reviewed.configuration_changed = True
            why = (f"the configuration changed since the review (the settings of {len(changed)} session(s) differ "
                   f"from those of run {reviewed.run_id}); {RE_PLAN} with the current configuration")
            for path in self.files:
                reviewed.refuse(path, why)
        return bool(changed)

    def _plan_here(self, job: _Job, moved: Callable[[int], None] | None = None) -> SessionPlan:
        return plan_session(job.path, job.header, job.settings, self._redactor(job.settings), self.summary.run_id,
                            self.options.include_content, self.times, job.handled, moved)

    def _show_upload(self, bar: ProgressBar, refresh: bool = False) -> None:
        """On --apply, the bar also says how many items were sent and how many the server confirmed (``refresh``:
        at once, when the bar's bytes no longer move: the last requests, --wait)."""
        if self.uploader is not None and self.options.progress:
            statuses = self.uploader.stats.statuses
            failed = statuses["failed"] + statuses["missing"]
            bar.set_postfix_str(f"items sent {statuses['sent'] + statuses['confirmed'] + statuses['missing']}, "
                                f"confirmed {statuses['confirmed']}" + (f", failed {failed}" if failed else ""),
                                refresh=refresh)

    def _finish(self, job: _Job, plan: SessionPlan) -> None:
        """A planned session into the summary, the manifest, the ledger's pending rows and the upload sink."""
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
        if self.uploader is not None:
            sent = self._send(plan, sizes)
            if self.options.reviewed is not None:
                self.options.reviewed.items_sent += sent
        self._pending_records += encoded.records  # with --include-content the (redacted) text too: review shows it
        self._pending_sources.append(SourceRecord(job.name, job.size, job.mtime_ns, job.header.id, job.shape,
                                                  self.summary.run_id, job.sha256, header_text(job.header)))
        if not self.options.apply and job.sha256 is not None:
            self._pending_reviewable.append(ReviewedSource(job.name, job.size, job.mtime_ns, job.sha256,
                                                           job.shape, self.summary.run_id))
        if (len(self._pending_records) >= FLUSH_ROWS or len(self._pending_sources) >= FLUSH_SOURCES
                or time.monotonic() >= self._flush_due):
            self._flush_ledger()
        self.times.extra["sink"] = self.times.extra.get("sink", 0.0) + time.perf_counter() - t0

    def _flush_ledger(self) -> None:
        """Manifest rows, then the sources they came from: a source is only marked read once its rows are in."""
        self.ledger.add_manifest_records(self._pending_records)
        self.ledger.record_sources(self._pending_sources)
        self.ledger.record_run_sources(self.summary.run_id, self._pending_reviewable)
        self.ledger.record_headers(self._pending_headers)
        self._pending_records, self._pending_sources, self._pending_reviewable = [], [], []
        self._pending_headers = []
        self._flush_due = time.monotonic() + FLUSH_SECONDS

    def _encode(self, job: _Job, plan: SessionPlan) -> _Encoded:
        """Each of the plan's rows once as JSON, with what the importer adds, encoded for the manifest file and for
        the ledger. The plan's rows are let go one by one: a session of many short messages has thousands, and all
        of them in four forms at once (rows, JSON values, manifest lines, ledger records) was its import's peak."""
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

    def _as_reviewed(self, reviewed: Reviewed, job: _Job, items: set[tuple[str, str, str]]) -> bool:
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

    def _send(self, plan: SessionPlan, sizes: list[int]) -> int:
        """The plan's items to the uploader, except those the server holds already, unchanged; how many went."""
        assert self.uploader is not None
        sent = 0
        for planned, size in zip(plan.items, sizes, strict=True):
            done = self._applied.get((planned.bank_id, planned.item.document_id))
            if done and done[0] == planned.item_hash and done[1] in SETTLED:
                continue
            item = planned.item
            row = DocumentRow(
                bank_id=planned.bank_id, document_id=item.document_id, bank_role=planned.bank_role,
                source_path=source_name(plan.path), session_id=plan.session.session_id,
                content_hash=item.metadata["content_hash"], item_hash=planned.item_hash, tags=item.tags,
                metadata=item.metadata,
            )
            payload = item.payload()
            self.uploader.add(row, payload, size + 1024)
            sent += 1
        return sent

    def _wanted(self, header: SessionHeader, mtime: float) -> bool:
        options = self.options
        if options.since is not None and datetime.fromtimestamp(mtime, tz=UTC) < options.since:
            return False
        if options.cwd_filter is not None:
            cwd = (header.cwd or "").rstrip("/")
            wanted = options.cwd_filter.rstrip("/")
            if cwd != wanted and not cwd.startswith(wanted + "/"):
                return False
        if options.project_filter is not None:
            project = project_name(self.resolver.for_cwd(header.cwd).settings, header.cwd)
            if project != options.project_filter:
                return False
        return True

    def _status(self, row: ManifestRow) -> str:
        """A planned row whose item the server already holds, unchanged, is ``unchanged``."""
        if row.status != "planned":
            return row.status
        return self._planned_status(row.bank_id, row.document_id, row.item_sha256)

    def _planned_status(self, bank_id: str | None, document_id: str | None, item_sha256: str | None) -> str:
        """``unchanged`` when the server already holds the row's item, unchanged; else ``planned``."""
        done = self._applied.get((bank_id or "", document_id or ""))
        if done and done[0] == item_sha256 and done[1] in SETTLED:
            return "unchanged"
        return "planned"

    def _reused(self, key: str, run_id: str) -> tuple[list[bytes], list[RowTally]] | None:
        """An unchanged source's rows from the run that last read it, statuses refreshed and with this run's id, as
        manifest lines and tallies. None when one of them cannot be given back (a ledger edited by hand: text that
        is not JSON, a decision that is not one, no status): the source is then read again, which records its rows
        anew, rather than failing on every run."""
        try:
            rows = self.ledger.latest_rows(key, run_id)  # fresh from the ledger: ours to change
            for row in rows:
                row["run_id"] = self.summary.run_id
                if row["status"] in ("planned", "unchanged"):
                    row["status"] = self._planned_status(row["bank_id"], row["document_id"], row["item_sha256"])
            tallies = [RowTally.of(row) for row in rows]
            return (encode_lines(rows), tallies) if all(tally.is_whole() for tally in tallies) else None
        except (ValueError, LookupError, TypeError, AttributeError):
            return None
