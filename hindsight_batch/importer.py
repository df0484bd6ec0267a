"""The import pipeline: session files in, planned retain items and manifest rows out.

``Importer`` wires sources, the ledger, the manifest and (with ``--apply``) the upload sink together, and keeps
the summary; each session is planned by :func:`hindsight_batch.planning.plan_or_skip`, here or (``--jobs``) in a
worker process (:mod:`hindsight_batch.workers`).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight_batch import __version__
from hindsight_batch.banks import BankResolver, with_project_bank
from hindsight_batch.catchup import CatchUpVerdict, verdict
from hindsight_batch.config import ConfigResolver, Settings
from hindsight_batch.errors import HindsightBatchError, Terminated, failure_reason, without_surrogates
from hindsight_batch.retention.stagetimes import StageTimes
from hindsight_batch.sinks.ledger import SETTLED, DocumentRow, Ledger, SourceState
from hindsight_batch.sinks.manifest import ManifestWriter

# What reads, plans and sends is imported when there is a file to plan: an import with nothing new to read (an
# empty folder, a catch-up re-run) starts without loading it (``python -X importtime``; scripts/bench.py).
if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from hindsight_batch.live import LiveCheck
    from hindsight_batch.planning import SessionPlan
    from hindsight_batch.redaction.redactor import Redactor
    from hindsight_batch.session.model import SessionHeader
    from hindsight_batch.sinks.upload import Uploader


@dataclass(frozen=True)
class ImportOptions:
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
    jobs: int = 1  # session files planned at once, in worker processes when more than one
    live: LiveCheck | None = None  # the live-retained check (hindsight_batch/live.py); None: not asked


def settings_hash(settings: Settings) -> str:
    """Everything that shapes an import's output, plus the tool version: if it changes, a source is redone."""
    shaping = settings.model_dump(mode="json", by_alias=True, exclude={"api_key", "base_url", "upload"})
    blob = json.dumps({"settings": shaping, "version": __version__}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class ImportSummary:
    run_id: str
    mode: str
    user_retain_modes: set[str] = field(default_factory=set)
    files: int = 0
    sessions: int = 0
    unchanged_files: int = 0
    filtered_out: int = 0
    not_sessions: list[dict[str, str]] = field(default_factory=list)  # empty files
    failed_files: list[dict[str, Any]] = field(default_factory=list)  # file, line (or None), reason
    duplicates: list[dict[str, str]] = field(default_factory=list)
    catch_up_skipped: list[dict[str, str]] = field(default_factory=list)
    sessions_skipped: list[dict[str, str]] = field(default_factory=list)  # no bank, or retained live
    banks: dict[str, dict[str, Any]] = field(default_factory=dict)  # project bank → sessions, why
    live_retained: Counter[str] = field(default_factory=Counter)  # decision → sessions
    live_unchecked: str | None = None
    stopped_early: bool = False
    bytes_read: int = 0
    entries: int = 0
    malformed_lines: list[dict[str, Any]] = field(default_factory=list)
    malformed_total: int = 0
    glued_lines: int = 0
    truncated_tails: int = 0
    invalid_utf8_lines: int = 0
    surrogates_replaced: int = 0
    messages_kept: int = 0
    messages_dropped: Counter[str] = field(default_factory=Counter)
    blocks_removed: Counter[str] = field(default_factory=Counter)
    redactions: Counter[str] = field(default_factory=Counter)
    chunks: int = 0
    routes: Counter[str] = field(default_factory=Counter)
    skip_reasons: Counter[str] = field(default_factory=Counter)
    items: Counter[str] = field(default_factory=Counter)  # by bank role
    statuses: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    manifest: str | None = None
    ledger: str | None = None
    upload: dict[str, Any] | None = None

    MAX_LISTED = 50

    def to_dict(self) -> dict[str, Any]:
        mb = self.bytes_read / 1e6
        return {
            "run_id": self.run_id,
            "mode": self.mode,
            "user_retain_mode": sorted(self.user_retain_modes),
            "router_mode_on": "router" in self.user_retain_modes,
            "files": self.files,
            "sessions": self.sessions,
            "unchanged_files": self.unchanged_files,
            "filtered_out": self.filtered_out,
            "not_sessions": self.not_sessions,
            "failed_files": self.failed_files[: self.MAX_LISTED],
            "failed_files_total": len(self.failed_files),
            "duplicate_sessions": self.duplicates,
            "catch_up_skipped": self.catch_up_skipped[: self.MAX_LISTED],
            "catch_up_skipped_total": len(self.catch_up_skipped),
            "sessions_skipped": self.sessions_skipped[: self.MAX_LISTED],
            "sessions_skipped_total": len(self.sessions_skipped),
            "project_banks": self.banks,
            "live_retained": dict(sorted(self.live_retained.items())),
            "live_retained_unchecked": self.live_unchecked,
            "stopped_early": self.stopped_early,
            "bytes_read": self.bytes_read,
            "entries": self.entries,
            "malformed_lines": self.malformed_total,
            "malformed": self.malformed_lines[: self.MAX_LISTED],
            "glued_lines": self.glued_lines,
            "truncated_tails": self.truncated_tails,
            "invalid_utf8_lines": self.invalid_utf8_lines,
            "surrogates_replaced": self.surrogates_replaced,
            "messages_kept": self.messages_kept,
            "messages_dropped": dict(sorted(self.messages_dropped.items())),
            "blocks_removed": dict(sorted(self.blocks_removed.items())),
            "redactions": dict(sorted(self.redactions.items())),
            "chunks": self.chunks,
            "routes": dict(sorted(self.routes.items())),
            "skip_reasons": dict(sorted(self.skip_reasons.items())),
            "items_by_bank_role": dict(sorted(self.items.items())),
            "statuses": dict(sorted(self.statuses.items())),
            "seconds": round(self.seconds, 3),
            "mb_per_second": round(mb / self.seconds, 1) if self.seconds > 0 else None,
            "stage_seconds": {k: round(v, 3) for k, v in self.stage_seconds.items()},
            "manifest": self.manifest,
            "ledger": self.ledger,
            "upload": self.upload,
        }


@contextlib.contextmanager
def _collections_between_files() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while files are read, collecting between files instead.

    Reading allocates millions of short-lived containers, freed by reference counting; the collector, woken every
    700 of them, kept re-scanning the entry index of a large session for cycles it does not hold: about a tenth of
    an import's time (``scripts/bench.py``). The few cycles a file may leave are collected after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]


@dataclass(frozen=True)
class _Job:
    """A session file that passed every check and is to be planned."""

    path: Path
    size: int
    mtime_ns: int
    header: SessionHeader
    settings: Settings
    shape: str  # settings hash the ledger keeps for the source
    handled: CatchUpVerdict | None
    annotations: dict[str, Any] = field(default_factory=dict)  # added to every manifest row (bank, live check)


WORKER_BACKLOG_BYTES = 512 << 20


def peek_header(path: Path) -> SessionHeader | str:
    """The reader's header peek, loaded on first use (see the imports above)."""
    from hindsight_batch.session.reader import peek_header as peek

    return peek(path)


def plan_or_skip(*args: Any) -> SessionPlan | str:
    """The planner, loaded on first use (see the imports above)."""
    from hindsight_batch.planning import plan_or_skip as plan

    return plan(*args)


class _Moved:
    """The bytes of the file being read that the bar was told of: it moves within a large file."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar
        self.done = 0

    def __call__(self, offset: int) -> None:
        self.bar.update(offset - self.done)
        self.done = offset


class _NoBar:
    """The progress bar of a run without one (``-q``, no terminal): tqdm is not even imported."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: float = 1) -> None:
        return None


def _progress_bar(total: int, unit: str, unit_scale: bool, disable: bool, desc: str, leave: bool) -> Any:
    if disable:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, unit_scale=unit_scale, desc=desc, leave=leave)


def _size(path: Path) -> int:
    """For the progress bar: a file that cannot even be looked at counts 0 (it is reported where it is read)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _plan_alone(
    job: _Job, submit: Callable[[_Job, ProcessPoolExecutor], Future[tuple[SessionPlan | str, StageTimes]]]
) -> tuple[SessionPlan | str, StageTimes] | BaseException:
    """Plan one session in a worker process of its own: its plan, or what went wrong."""
    from concurrent.futures.process import BrokenProcessPool

    from hindsight_batch.workers import end_workers, worker_pool

    alone = worker_pool(1)
    try:
        return submit(job, alone).result()
    except BrokenProcessPool:
        return RuntimeError("the worker process planning this file died (it crashed or ran out of memory)")
    except HindsightBatchError:
        raise
    except Exception as exc:
        return exc
    finally:
        end_workers(alone)


class Importer:
    """Runs an import over many files: one ledger, one manifest, per-session configuration."""

    def __init__(
        self,
        resolver: ConfigResolver,
        ledger: Ledger,
        options: ImportOptions,
        files: list[Path],
        uploader_factory: Callable[[str], Uploader] | None = None,
        manifest: ManifestWriter | None = None,
    ) -> None:
        """``manifest``: a writer the caller opened already (to report a bad path before any other work);
        by default one for ``options.manifest``."""
        self._manifest = manifest
        self.resolver = resolver
        self.banks = BankResolver(resolver.env)
        self.ledger = ledger
        self.options = options
        self.files = files
        self.summary = ImportSummary(new_run_id(), "apply" if options.apply else "dry-run")
        self.uploader = uploader_factory(self.summary.run_id) if uploader_factory else None
        self._session_files: dict[str, set[str]] | None = None
        self._deadline = time.monotonic() + options.max_seconds if options.max_seconds is not None else None
        self._latest: dict[str, list[dict[str, Any]]] = {}
        self._pending_rows: list[dict[str, Any]] = []
        self._pending_sources: list[tuple[str, int, int, str, str, str]] = []
        self.times = StageTimes()
        self.redactors: dict[tuple[str, ...], Redactor] = {}
        self._key = ledger.fingerprint_key()
        self._shaped: dict[tuple[int, str, tuple[str, ...]], tuple[object, Settings, str]] = {}

    def _redactor(self, settings: Settings) -> Redactor:
        from hindsight_batch.redaction.redactor import Redactor

        hosts = tuple(settings.redaction.private_hosts)
        if hosts not in self.redactors:
            self.redactors[hosts] = Redactor(self._key, hosts)
        return self.redactors[hosts]

    def run(self) -> ImportSummary:
        summary = self.summary
        started = time.perf_counter()
        manifest = self._manifest or ManifestWriter(self.options.manifest)
        summary.manifest = str(self.options.manifest) if self.options.manifest else None
        summary.ledger = str(self.ledger.path)
        status = "failed"
        try:
            self.ledger.start_run(summary.run_id, "import", summary.mode)
            known = self.ledger.sources()
            self._latest = self.ledger.latest_rows() if known else {}
            applied = self.ledger.document_hashes()
            total = sum(_size(p) for p in self.files)
            with _progress_bar(total=total, unit="B", unit_scale=True, disable=not self.options.progress,
                                desc="import", leave=False) as bar, _collections_between_files():
                if self.options.jobs > 1:
                    self._run_in_workers(known, applied, manifest, bar)
                else:
                    for path in self.files:
                        job = self._prepare_isolated(path, known, applied, manifest)
                        moved = _Moved(bar) if self.options.progress else None
                        if job is not None:
                            try:
                                plan = self._plan_here(job, moved)
                            except HindsightBatchError:
                                raise
                            except Exception as exc:  # this file only: the run goes on (never a BaseException)
                                self._file_failed(path, exc)
                            else:
                                self._finish(job, plan, applied, manifest)
                        bar.update(_size(path) - (moved.done if moved else 0))
                        self._show_upload(bar)
                        gc.collect(0)
            self._flush_ledger()
            if self.uploader is not None:
                self.uploader.finish()
                still_open = self.uploader.wait_for_operations(self.options.wait_timeout) if self.options.wait else 0
                stats = self.uploader.stats
                summary.upload = {
                    "requests": stats.requests,
                    "documents": dict(sorted((k, v) for k, v in stats.statuses.items() if v)),
                    "failed": stats.statuses["failed"] + stats.statuses["missing"],
                    "operations_still_open": still_open,
                    "errors": stats.errors,
                }
            status = "partial" if summary.failed_files else "ok"
        except (KeyboardInterrupt, Terminated):
            status = "interrupted"
            raise
        finally:
            manifest.close(complete=status in ("ok", "partial"))
            summary.seconds = time.perf_counter() - started
            summary.stage_seconds = {
                "read+parse": self.times.extra.get("read", 0.0),
                "filter+project": self.times.project,
                "redact": self.times.redact,
                "chunk+route": self.times.extra.get("chunk+route", 0.0),
                "manifest+ledger": self.times.extra.get("sink", 0.0),
            }
            if summary.failed_files:
                self.ledger.record_failed_files(summary.run_id, summary.failed_files)
            self.ledger.finish_run(summary.run_id, status, summary.to_dict())
        return summary

    def _file_failed(self, path: Path, exc: BaseException, line: int | None = None) -> None:
        """One file could not be read or planned: listed (file, line where known, reason; no traceback, no
        secret), never recorded as read (so the next run tries it again); the run goes on and exits 1."""
        reason = failure_reason(exc)
        other = getattr(exc, "filename", None) if isinstance(exc, OSError) else None
        if other is not None and os.fsdecode(other) != str(path):  # e.g. a config file of the session's project
            reason += f": {without_surrogates(os.fsdecode(other))[0]}"
        self.summary.failed_files.append({"file": without_surrogates(str(path))[0], "line": line, "reason": reason})

    def _run_in_workers(
        self,
        known: dict[str, SourceState],
        applied: dict[tuple[str, str], tuple[str, str]],
        manifest: ManifestWriter,
        bar: Any,
    ) -> None:
        """``--jobs N``: sessions are planned in N worker processes and finished here, in file order, so the
        manifest, the ledger and the uploads are the same as with one process.

        While a large session is planned, the other workers go on with the files after it; their plans wait
        for it, up to ``WORKER_BACKLOG_BYTES`` of session files (a plan keeps only a few percent of that)."""
        from concurrent.futures.process import BrokenProcessPool

        from hindsight_batch.workers import PlanTask, end_workers, plan_in_worker, worker_pool

        jobs = self.options.jobs
        waiting: deque[tuple[_Job, Future[tuple[SessionPlan | str, StageTimes]]]] = deque()
        backlog = 0
        pool = worker_pool(jobs)

        def submit(job: _Job, into: ProcessPoolExecutor) -> Future[tuple[SessionPlan | str, StageTimes]]:
            task = PlanTask(job.path, job.header, job.settings, self._key, self.summary.run_id,
                            self.options.include_content, job.handled)
            return into.submit(plan_in_worker, task)

        def finish_first() -> None:
            nonlocal backlog, pool, waiting
            job, future = waiting.popleft()
            backlog -= job.size
            try:
                plan, times = future.result()
            except BrokenProcessPool:
                # A worker died (a crash in C code, the kernel's OOM killer): every plan in flight is lost with
                # it. The others go to a fresh pool; this file is planned again on its own, so a file that kills
                # its worker twice is the one that failed.
                pool.shutdown(wait=False, cancel_futures=True)
                pool = worker_pool(jobs)
                waiting = deque((j, submit(j, pool)) for j, _ in waiting)
                outcome = _plan_alone(job, submit)
                if isinstance(outcome, BaseException):
                    self._file_failed(job.path, outcome)
                else:
                    self.times.add(outcome[1])
                    self._finish(job, outcome[0], applied, manifest)
            except HindsightBatchError:
                raise
            except Exception as exc:  # planning this file failed in its worker: this file only
                self._file_failed(job.path, exc)
            else:
                self.times.add(times)
                self._finish(job, plan, applied, manifest)
            bar.update(job.size)
            self._show_upload(bar)

        try:
            for path in self.files:
                job = self._prepare_isolated(path, known, applied, manifest)
                if job is None:
                    bar.update(_size(path))
                    continue
                waiting.append((job, submit(job, pool)))
                backlog += job.size
                while (len(waiting) > jobs and backlog > WORKER_BACKLOG_BYTES) or (waiting and waiting[0][1].done()):
                    finish_first()
            while waiting:
                finish_first()
        except BaseException:
            end_workers(pool)  # an interrupt or a failed run: no worker goes on planning a file nobody waits for
            raise
        pool.shutdown(wait=True)

    def _prepare_isolated(
        self,
        path: Path,
        known: dict[str, SourceState],
        applied: dict[tuple[str, str], tuple[str, str]],
        manifest: ManifestWriter,
    ) -> _Job | None:
        """:meth:`_prepare`, with anything that fails on this file (it cannot be read, even at the header peek; a
        catch-up verdict that cannot be read) reported as this file's failure."""
        try:
            return self._prepare(path, known, applied, manifest)
        except HindsightBatchError:
            raise  # a configuration error stops the run (exit 3, naming the file and key), as S8 wants
        except Exception as exc:
            self._file_failed(path, exc)
            return None

    def _prepare(
        self,
        path: Path,
        known: dict[str, SourceState],
        applied: dict[tuple[str, str], tuple[str, str]],
        manifest: ManifestWriter,
    ) -> _Job | None:
        """Everything before a session is planned: filters, duplicates, catch-up rules, an unchanged source (its
        rows are reused here). Returns what is left to plan, or None."""
        summary = self.summary
        summary.files += 1
        stat = path.stat()
        header = peek_header(path)  # unreadable (permissions, gone): failed by _prepare_isolated, this file only
        if isinstance(header, str):
            if stat.st_size == 0:
                summary.not_sessions.append({"file": str(path), "reason": header})  # pi has not written it yet
            else:
                reason = "no readable session header" if header == "empty file" else header
                summary.failed_files.append({"file": without_surrogates(str(path))[0], "line": None,
                                             "reason": reason})
            return None
        if not self._wanted(header, stat.st_mtime):
            summary.filtered_out += 1
            return None
        owner = self._owner(header.id, str(path))
        if owner != str(path):
            # Two files with one session id (a copied file) would fight over the same document ids.
            summary.duplicates.append({"file": str(path), "same_session_as": owner})
            return None
        handled: CatchUpVerdict | None = None
        if self.options.catch_up:
            if self._deadline is not None and time.monotonic() >= self._deadline:
                summary.stopped_early = True
                return None
            handled = verdict(header.cwd, path)
            if not handled.retain:
                summary.catch_up_skipped.append({"file": str(path), "reason": handled.reason or ""})
                return None
        resolved = self.resolver.for_cwd(header.cwd)
        settings = resolved.settings
        project = (settings.project_name or "").strip() or Path(header.cwd or "").name
        choice = self.banks.choose(resolved, header.cwd, project, header.id, path)
        if choice.bank_id is None:
            summary.sessions_skipped.append({"file": str(path), "reason": f"no project bank: {choice.skip}"})
            return None
        tags = self.banks.family_tags(resolved, header.cwd)
        # The settings and their hash once per (configuration, bank, tags), not per file: many sessions share them.
        shaped = self._shaped.get((id(resolved), choice.bank_id, tuple(tags)))
        if shaped is None or shaped[0] is not resolved:
            settings = with_project_bank(settings, choice.bank_id, tags)
            shaped = (resolved, settings, settings_hash(settings))
            self._shaped[(id(resolved), choice.bank_id, tuple(tags))] = shaped
        settings, base_shape = shaped[1], shaped[2]
        seen = summary.banks.setdefault(choice.bank_id, {"sessions": 0, "why": choice.why})
        seen["sessions"] += 1
        annotations: dict[str, Any] = {"bank_why": choice.why}
        live = self.options.live
        summary.user_retain_modes.add(settings.user_retain.mode)
        shape = base_shape + (":catch-up" if self.options.catch_up else "")
        shape += f":live-{live.mode}" if live is not None else ""
        key = str(path)
        previous = known.get(key)
        summary.sessions += 1
        if (
            previous is not None
            and not self.options.include_content
            and (previous.size, previous.mtime_ns, previous.settings_hash) == (stat.st_size, stat.st_mtime_ns, shape)
        ):
            rows = self._latest.get(key, [])
            for data in rows:
                if data["status"] in ("planned", "unchanged"):
                    data["status"] = self._status({**data, "status": "planned"}, applied)
            # An applied run re-reads a source that still has anything to send (e.g. after a kill).
            if not (self.options.apply and any(d["status"] == "planned" for d in rows)):
                self._reuse(rows, manifest)  # the ledger keeps them under the run that read the file
                summary.unchanged_files += 1
                return None
        if live is not None:  # asked only for a source that is read again (hindsight_batch/live.py)
            decision = live.decide(settings.banks.project.bank_id or "", resolved.family, header.id, path, header.cwd)
            summary.live_retained[decision.decision] += 1
            summary.live_unchecked = summary.live_unchecked or live.problem
            annotations["live_retained"] = decision.as_json()
            if decision.decision == "skip":
                summary.sessions_skipped.append({"file": str(path), "reason": decision.note})
                return None
            handled = decision.handled(handled)
        return _Job(path, stat.st_size, stat.st_mtime_ns, header, settings, shape, handled, annotations)

    def _plan_here(self, job: _Job, moved: Callable[[int], None] | None = None) -> SessionPlan | str:
        return plan_or_skip(job.path, job.header, job.settings, self._redactor(job.settings), self.summary.run_id,
                            self.options.include_content, self.times, job.handled, moved)

    def _show_upload(self, bar: Any) -> None:
        """On --apply, the bar also says how many items were sent and how many the server confirmed."""
        if self.uploader is not None and self.options.progress:
            statuses = self.uploader.stats.statuses
            bar.set_postfix_str(f"items sent {statuses['sent'] + statuses['confirmed']}, "
                                f"confirmed {statuses['confirmed']}", refresh=False)

    def _finish(
        self,
        job: _Job,
        plan: SessionPlan | str,
        applied: dict[tuple[str, str], tuple[str, str]],
        manifest: ManifestWriter,
    ) -> None:
        """A planned session into the summary, the manifest, the ledger's pending rows and the upload sink.
        ``plan`` is a string when catch-up skipped the session while planning it (why)."""
        summary = self.summary
        if isinstance(plan, str):
            summary.catch_up_skipped.append({"file": str(job.path), "reason": plan})
            return
        t0 = time.perf_counter()
        try:  # everything that can fail on this file's data, before anything is written
            rows_json, lines = [], []
            for row in plan.rows:
                data = row.as_json()
                data.update(job.annotations)
                data["status"] = self._status(data, applied)
                line = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
                line.encode("utf-8")  # text no UTF-8 file can hold (a lone surrogate) fails here, not mid-write
                lines.append(line)
                if not self.options.include_content:  # the ledger keeps content only when asked (review page)
                    data.pop("content", None)
                rows_json.append(data)
            sizes = [len(planned.item.content.encode("utf-8")) for planned in plan.items]
        except Exception as exc:
            self._file_failed(job.path, exc)
            return
        self._account(plan)
        for line in lines:
            manifest.write_line(line)
        self._count_rows(rows_json)
        if self.uploader is not None:
            self._send(plan, applied, sizes)
        self._pending_rows += rows_json
        self._pending_sources.append(
            (str(job.path), job.size, job.mtime_ns, job.header.id, job.shape, summary.run_id)
        )
        if len(self._pending_sources) >= 200 or len(self._pending_rows) >= 2000:
            self._flush_ledger()
        self.times.extra["sink"] = self.times.extra.get("sink", 0.0) + time.perf_counter() - t0

    def _flush_ledger(self) -> None:
        """Manifest rows, then the sources they came from: a source is only marked read once its rows are in."""
        self.ledger.add_manifest_rows(self._pending_rows)
        self.ledger.record_sources(self._pending_sources)
        self._pending_rows, self._pending_sources = [], []

    def _send(self, plan: SessionPlan, applied: dict[tuple[str, str], tuple[str, str]], sizes: list[int]) -> None:
        assert self.uploader is not None
        for planned, size in zip(plan.items, sizes, strict=True):
            done = applied.get((planned.bank_id, planned.item.document_id))
            if done and done[0] == planned.item_hash and done[1] in SETTLED:
                continue
            item = planned.item
            row = DocumentRow(
                bank_id=planned.bank_id, document_id=item.document_id, bank_role=planned.bank_role,
                source_path=str(plan.path), session_id=plan.session.session_id,
                content_hash=item.metadata["content_hash"], item_hash=planned.item_hash, tags=item.tags,
                metadata=item.metadata,
            )
            payload = item.payload()
            self.uploader.add(row, payload, size + 1024)

    def _owner(self, session_id: str, path: str) -> str:
        """The one file that imports a session id: the first path, in sort order, of those that hold it."""
        if self._session_files is None:
            self._session_files = {}
            for known_path, session in self.ledger.source_sessions().items():
                if os.path.isfile(known_path):  # os.path, not Path: once per source the ledger knows
                    self._session_files.setdefault(session, set()).add(os.path.realpath(known_path))
        paths = self._session_files.setdefault(session_id, set())
        paths.add(path)
        return min(p for p in paths if p == path or os.path.isfile(p))

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
            project = self.resolver.for_cwd(header.cwd).settings.project_name or Path(header.cwd or "").name
            if project != options.project_filter:
                return False
        return True

    def _status(self, row: dict[str, Any], applied: dict[tuple[str, str], tuple[str, str]]) -> str:
        if row["status"] != "planned":
            return str(row["status"])
        done = applied.get((row["bank_id"], row["document_id"]))
        if done and done[0] == row["item_sha256"] and done[1] in SETTLED:
            return "unchanged"
        return "planned"

    def _reuse(self, rows: list[dict[str, Any]], manifest: ManifestWriter) -> None:
        """An unchanged source: its rows from the run that last read it (statuses refreshed), with this run's id."""
        for data in rows:
            data["run_id"] = self.summary.run_id
            manifest.write_json(data)
        self._count_rows(rows)

    def _count_rows(self, rows: list[dict[str, Any]]) -> None:
        from hindsight_batch.routing.strategy import reason_without_mode

        summary = self.summary
        seen_chunks: set[tuple[str, int]] = set()
        for row in rows:
            summary.statuses[row["status"]] += 1
            chunk_key = (row["segment"], row["chunk_index"])
            if chunk_key not in seen_chunks:
                seen_chunks.add(chunk_key)
                summary.chunks += 1
                summary.routes[row["decision"]["route"]] += 1
                if row["status"] == "skipped":
                    summary.skip_reasons[reason_without_mode(row["decision"]["reason"])] += 1
            if row.get("bank_role"):
                summary.items[row["bank_role"]] += 1

    def _account(self, plan: SessionPlan) -> None:
        summary = self.summary
        session = plan.session
        summary.bytes_read += session.size
        summary.entries += plan.entries
        summary.malformed_total += len(session.malformed)
        for problem in session.malformed:
            if len(summary.malformed_lines) < ImportSummary.MAX_LISTED:
                summary.malformed_lines.append(
                    {"file": str(plan.path), "line": problem.lineno, "reason": problem.reason}
                )
        summary.glued_lines += len(session.glued_lines)
        summary.truncated_tails += int(session.truncated_tail)
        summary.invalid_utf8_lines += session.invalid_utf8_lines
        summary.surrogates_replaced += session.surrogates_replaced
        summary.messages_kept += plan.kept
        summary.messages_dropped.update(plan.dropped)
        summary.blocks_removed.update(plan.removed)
        summary.redactions.update(plan.redactions)
