"""The import pipeline: session files in, planned retain items and manifest rows out.

``plan_session`` is the pure part (one file -> a :class:`SessionPlan`); ``Importer`` wires sources, the ledger,
the manifest and (with ``--apply``) the upload sink together, and keeps the summary.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import hashlib
import json
import multiprocessing
import os
import signal
import sys
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from hindsight_batch import __version__, jsoncodec
from hindsight_batch.catchup import CatchUpVerdict, verdict
from hindsight_batch.chunking import Chunk, chunk_nodes, joined_size
from hindsight_batch.config import ConfigResolver, Settings
from hindsight_batch.items import (
    RetainItem,
    SessionScope,
    base_tags,
    content_sha256,
    document_id,
    item_metadata,
    observation_scopes,
    project_bank_id,
    session_context,
    session_scope,
    valid_timestamp,
)
from hindsight_batch.redaction.redactor import Findings, Redactor
from hindsight_batch.retention.records import EntryOutcome, RecordMaker, RecordStore, StageTimes
from hindsight_batch.routing import route_content, strategy_for
from hindsight_batch.session.model import EntryNode, SessionFile, SessionHeader
from hindsight_batch.session.reader import peek_header, read_session
from hindsight_batch.session.tree import branch_segments, context_view
from hindsight_batch.sinks.ledger import DocumentRow, Ledger, SourceState
from hindsight_batch.sinks.manifest import ManifestRow, ManifestWriter
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


@dataclass
class PlannedItem:
    item: RetainItem
    bank_id: str
    bank_role: str
    item_hash: str


@dataclass
class SessionPlan:
    path: Path
    session: SessionFile  # its entry index is left behind when the plan was made in a worker process
    entries: int = 0
    rows: list[ManifestRow] = field(default_factory=list)
    items: list[PlannedItem] = field(default_factory=list)
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    removed: Counter[str] = field(default_factory=Counter)
    redactions: Counter[str] = field(default_factory=Counter)


def settings_hash(settings: Settings) -> str:
    """Everything that shapes an import's output, plus the tool version: if it changes, a source is redone."""
    shaping = settings.model_dump(mode="json", by_alias=True, exclude={"api_key", "base_url", "upload"})
    blob = json.dumps({"settings": shaping, "version": __version__}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def item_sha256(bank_id: str, item: RetainItem) -> str:
    """What the server would be sent for this item, hashed: keys sorted, so equal items hash equal."""
    return hashlib.sha256(jsoncodec.dumps({"bank": bank_id, "item": item.payload()}, sort_keys=True)).hexdigest()


def _segment_nodes(session: SessionFile, settings: Settings) -> Iterator[tuple[str, EntryNode, list[EntryNode]]]:
    all_branches = settings.import_.branches == "all"
    for segment in branch_segments(session.entries, all_branches):
        nodes = segment.entries
        if settings.import_.compaction == "context" and segment.key == "main":
            view = context_view(nodes)
            nodes = ([view.compaction] if view.compaction else []) + view.entries
        yield segment.key, segment.leaf, nodes


def plan_session(
    path: Path,
    header: SessionHeader,
    settings: Settings,
    redactor: Redactor,
    run_id: str,
    include_content: bool,
    times: StageTimes,
    handled: CatchUpVerdict | None = None,
) -> SessionPlan:
    """Plan one session. With ``handled`` (catch-up), messages the live extension already handled are left out
    of every window's content; the windows themselves keep their places, so document ids stay the same."""
    store = RecordStore()
    try:
        t0 = time.perf_counter()
        inner = times.project + times.redact
        session = read_session(path, RecordMaker(settings, redactor, store, times))
        elapsed = time.perf_counter() - t0 - (times.project + times.redact - inner)
        times.extra["read"] = times.extra.get("read", 0.0) + elapsed
        plan = SessionPlan(path, session, entries=len(session.entries))
        t1 = time.perf_counter()
        _plan_chunks(plan, header, settings, store, run_id, include_content, handled)
        times.extra["chunk+route"] = times.extra.get("chunk+route", 0.0) + time.perf_counter() - t1
        return plan
    finally:
        store.close()


def _plan_chunks(
    plan: SessionPlan,
    header: SessionHeader,
    settings: Settings,
    store: RecordStore,
    run_id: str,
    include_content: bool,
    handled: CatchUpVerdict | None = None,
) -> None:
    scope = session_scope(header, str(plan.path), settings)
    tags = base_tags(scope, settings)
    scopes = observation_scopes(scope, settings)
    bank_ids = {"project": project_bank_id(scope, settings), "global": settings.banks.user.bank_id or ""}
    strategy = strategy_for(settings)
    counted: set[int] = set()
    for segment, leaf, nodes in _segment_nodes(plan.session, settings):
        chunks = chunk_nodes(nodes, settings.import_.turns_per_chunk, settings.import_.max_chunk_bytes)
        per_chunk_dropped = _dropped_by_chunk(nodes, chunks)
        if handled is not None:
            done = _handled_seqs(nodes, handled) if segment == "main" else set()
            for chunk in chunks:
                left_out = [n for n in chunk.nodes if n.seq in done]
                if left_out:
                    per_chunk_dropped.setdefault(chunk.window, Counter())["handled-live"] += len(left_out)
                    plan.dropped["handled-live"] += len(left_out)
                    chunk.nodes = [n for n in chunk.nodes if n.seq not in done]
                    chunk.size = joined_size(chunk.nodes)
            chunks = [c for c in chunks if c.nodes]
        for node in nodes:
            outcome = node.payload
            if isinstance(outcome, EntryOutcome) and node.seq not in counted:
                counted.add(node.seq)
                for reason, count in outcome.removed.items():  # (Counter.update costs more per call)
                    plan.removed[reason] += count
                if outcome.handle is not None:
                    plan.kept += 1
                elif outcome.dropped:
                    plan.dropped[outcome.dropped] += 1
        for chunk in chunks:
            _plan_chunk(plan, scope, tags, scopes, bank_ids, settings, store, strategy, run_id, include_content,
                        segment, leaf, chunk, per_chunk_dropped.get(chunk.window, Counter()))


class CursorNotOnPath(Exception):
    """The live extension's cursor names a message that is not on the session's active path."""


def _handled_seqs(path: list[EntryNode], handled: CatchUpVerdict) -> set[int]:
    """The entries at or before the live extension's retain cursor on the active path."""
    if handled.handled_id is None and handled.handled_index is None:
        return set()
    if handled.handled_id is not None:
        positions = [i for i, node in enumerate(path) if node.id == handled.handled_id]
    else:
        messages = [i for i, node in enumerate(path) if node.type in ("message", "custom_message")]
        index = handled.handled_index or 0
        positions = [messages[index]] if 0 <= index < len(messages) else []
    if not positions:
        raise CursorNotOnPath("the retain cursor names a message that is not on the active path")
    return {node.seq for node in path[: positions[-1] + 1]}


def _dropped_by_chunk(nodes: list[EntryNode], chunks: list[Chunk]) -> dict[int, Counter[str]]:
    """Dropped messages are counted in the chunk of the nearest kept record before them (or the first chunk)."""
    window_of = {node.seq: chunk.window for chunk in chunks for node in chunk.nodes}
    result: dict[int, Counter[str]] = {}
    current = 0
    for node in nodes:
        if node.seq in window_of:
            current = window_of[node.seq]
        elif isinstance(node.payload, EntryOutcome) and node.payload.dropped and chunks:
            counts = result.get(current)
            if counts is None:
                counts = result[current] = Counter()
            counts[node.payload.dropped] += 1
    return result


def _plan_chunk(
    plan: SessionPlan,
    scope: SessionScope,
    tags: list[str],
    scopes: list[list[str]] | None,
    bank_ids: dict[str, str],
    settings: Settings,
    store: RecordStore,
    strategy: Any,
    run_id: str,
    include_content: bool,
    segment: str,
    leaf: EntryNode,
    chunk: Chunk,
    dropped: Counter[str],
) -> None:
    findings = Findings()
    removed: Counter[str] = Counter()
    handles: list[int] = []
    for node in chunk.nodes:
        outcome = node.payload
        assert isinstance(outcome, EntryOutcome) and outcome.handle is not None
        handles.append(outcome.handle)
        for reason, count in outcome.removed.items():
            removed[reason] += count
        if outcome.findings:
            findings.add(outcome.findings)
    joined = store.join(handles)
    content = joined.decode("utf-8")
    plan.redactions.update(findings.counts)
    digest = content_sha256(content)
    context = session_context(scope)
    decision = route_content(
        settings,
        content,
        context=context,
        cwd=scope.cwd,
        project_bank_id=bank_ids["project"],
        session_file=scope.session_file,
        base_tags=tags,
        redactions=findings.counts,
        strategy=strategy,
    )
    first = plan.session.entries[chunk.nodes[0].seq]
    timestamp = valid_timestamp(first.timestamp) or valid_timestamp(scope.started)
    common: dict[str, Any] = {
        "run_id": run_id,
        "source_file": str(plan.path),
        "session_id": scope.session_id,
        "leaf": leaf.id,
        "segment": segment,
        "chunk_index": chunk.window,
        "first_entry_id": chunk.first_entry_id,
        "last_entry_id": chunk.last_entry_id,
        "turns": chunk.turns,
        "decision": decision,
        "observation_scopes": scopes,
        "content_sha256": digest,
        "bytes": len(joined),
        "messages_kept": len(chunk.nodes),
        "messages_dropped": dict(dropped),
        "blocks_removed": dict(removed),
        "redactions": dict(findings.counts),
        "fingerprints": sorted(findings.fingerprints),
        "content": content if include_content else None,
    }
    writing = [t for t in decision.targets if t.will_write]
    if not writing:
        status = "skipped" if decision.route == "skip" else "not-written"
        plan.rows.append(ManifestRow(**common, document_id=None, bank_role=None, bank_id=None, tags=tags,
                                     item_sha256=None, status=status))
        return
    ids = {t.bank_role: document_id(scope.session_id, t.bank_role, segment, chunk.window) for t in writing}
    for target in writing:
        others = [doc for role, doc in ids.items() if role != target.bank_role]
        item = RetainItem(
            content=content,
            context=context,
            timestamp=timestamp,
            document_id=ids[target.bank_role],
            tags=target.tags,
            observation_scopes=scopes,
            metadata=item_metadata(
                scope, bank_role=target.bank_role, segment=segment, window=chunk.window,
                first_entry=chunk.first_entry_id, last_entry=chunk.last_entry_id, content_hash=digest,
                settings=settings, route=decision.route, other_document_id=others[0] if others else None,
            ),
        )
        hashed = item_sha256(target.bank_id, item)
        plan.items.append(PlannedItem(item, target.bank_id, target.bank_role, hashed))
        plan.rows.append(ManifestRow(**common, document_id=item.document_id, bank_role=target.bank_role,
                                     bank_id=target.bank_id, tags=target.tags, item_sha256=hashed, status="planned"))


@dataclass
class ImportSummary:
    run_id: str
    mode: str
    user_retain_modes: set[str] = field(default_factory=set)
    files: int = 0
    sessions: int = 0
    unchanged_files: int = 0
    filtered_out: int = 0
    not_sessions: list[dict[str, str]] = field(default_factory=list)
    duplicates: list[dict[str, str]] = field(default_factory=list)
    catch_up_skipped: list[dict[str, str]] = field(default_factory=list)
    stopped_early: bool = False
    bytes_read: int = 0
    entries: int = 0
    malformed_lines: list[dict[str, Any]] = field(default_factory=list)
    malformed_total: int = 0
    glued_lines: int = 0
    truncated_tails: int = 0
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
            "duplicate_sessions": self.duplicates,
            "catch_up_skipped": self.catch_up_skipped[: self.MAX_LISTED],
            "catch_up_skipped_total": len(self.catch_up_skipped),
            "stopped_early": self.stopped_early,
            "bytes_read": self.bytes_read,
            "entries": self.entries,
            "malformed_lines": self.malformed_total,
            "malformed": self.malformed_lines[: self.MAX_LISTED],
            "glued_lines": self.glued_lines,
            "truncated_tails": self.truncated_tails,
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


@dataclass(frozen=True)
class _PlanTask:
    """What a worker process needs to plan one session (sent to it pickled)."""

    path: Path
    header: SessionHeader
    settings: Settings
    fingerprint_key: bytes
    run_id: str
    include_content: bool
    handled: CatchUpVerdict | None


WORKER_BACKLOG_BYTES = 512 << 20
_WORKER_REDACTORS: dict[tuple[bytes, tuple[str, ...]], Redactor] = {}


def _worker_started(parent: int) -> None:
    """A worker must not outlive its import (a cron timeout or a kill ends the parent): on Linux the kernel ends
    it with its parent. Elsewhere it ends when the parent's queue closes."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent was gone before the request took effect
        os._exit(1)


def _plan_in_worker(task: _PlanTask) -> tuple[SessionPlan | str, StageTimes]:
    """Plan one session in a worker process. The entry index stays here: the parent needs counts and rows."""
    hosts = tuple(task.settings.redaction.private_hosts)
    redactor = _WORKER_REDACTORS.get((task.fingerprint_key, hosts))
    if redactor is None:
        redactor = _WORKER_REDACTORS[(task.fingerprint_key, hosts)] = Redactor(task.fingerprint_key, hosts)
    times = StageTimes()
    try:
        plan = plan_session(task.path, task.header, task.settings, redactor, task.run_id, task.include_content,
                            times, task.handled)
    except CursorNotOnPath as exc:
        return str(exc), times
    plan.session.entries = []
    gc.collect(0)  # the parent's paused collector is inherited: collect between files, as the parent does
    return plan, times


class Importer:
    """Runs an import over many files: one ledger, one manifest, per-session configuration."""

    def __init__(
        self,
        resolver: ConfigResolver,
        ledger: Ledger,
        options: ImportOptions,
        files: list[Path],
        uploader_factory: Callable[[str], Uploader] | None = None,
    ) -> None:
        self.resolver = resolver
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

    def _redactor(self, settings: Settings) -> Redactor:
        hosts = tuple(settings.redaction.private_hosts)
        if hosts not in self.redactors:
            self.redactors[hosts] = Redactor(self._key, hosts)
        return self.redactors[hosts]

    def run(self) -> ImportSummary:
        summary = self.summary
        started = time.perf_counter()
        manifest = ManifestWriter(self.options.manifest)
        summary.manifest = str(self.options.manifest) if self.options.manifest else None
        summary.ledger = str(self.ledger.path)
        self.ledger.start_run(summary.run_id, "import", summary.mode)
        known = self.ledger.sources()
        self._latest = self.ledger.latest_rows() if known else {}
        applied = self.ledger.document_hashes()
        total = sum(p.stat().st_size for p in self.files)
        status = "failed"
        try:
            with tqdm(total=total, unit="B", unit_scale=True, disable=not self.options.progress,
                      desc="import", leave=False) as bar, _collections_between_files():
                if self.options.jobs > 1:
                    self._run_in_workers(known, applied, manifest, bar)
                else:
                    for path in self.files:
                        job = self._prepare(path, known, applied, manifest)
                        if job is not None:
                            self._finish(job, self._plan_here(job), applied, manifest)
                        bar.update(path.stat().st_size)
                        gc.collect(0)
            self._flush_ledger()
            if self.uploader is not None:
                self.uploader.finish()
                still_open = self.uploader.wait_for_operations(self.options.wait_timeout) if self.options.wait else 0
                stats = self.uploader.stats
                summary.upload = {
                    "requests": stats.requests,
                    "documents": dict(sorted((k, v) for k, v in stats.statuses.items() if v)),
                    "failed": stats.statuses["failed"],
                    "operations_still_open": still_open,
                    "errors": stats.errors,
                }
            status = "ok"
        finally:
            manifest.close()
            summary.seconds = time.perf_counter() - started
            summary.stage_seconds = {
                "read+parse": self.times.extra.get("read", 0.0),
                "filter+project": self.times.project,
                "redact": self.times.redact,
                "chunk+route": self.times.extra.get("chunk+route", 0.0),
                "manifest+ledger": self.times.extra.get("sink", 0.0),
            }
            self.ledger.finish_run(summary.run_id, status, summary.to_dict())
        return summary

    def _run_in_workers(
        self,
        known: dict[str, SourceState],
        applied: dict[tuple[str, str], tuple[str, str]],
        manifest: ManifestWriter,
        bar: tqdm[Any],
    ) -> None:
        """``--jobs N``: sessions are planned in N worker processes and finished here, in file order, so the
        manifest, the ledger and the uploads are the same as with one process.

        While a large session is planned, the other workers go on with the files after it; their plans wait
        for it, up to ``WORKER_BACKLOG_BYTES`` of session files (a plan keeps only a few percent of that)."""
        jobs = self.options.jobs
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")  # fork: no re-import
        waiting: deque[tuple[_Job, Future[tuple[SessionPlan | str, StageTimes]]]] = deque()
        backlog = 0

        def finish_first() -> None:
            nonlocal backlog
            job, future = waiting.popleft()
            backlog -= job.size
            plan, times = future.result()
            self.times.add(times)
            self._finish(job, plan, applied, manifest)
            bar.update(job.size)

        with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_worker_started,
                                 initargs=(os.getpid(),)) as pool:
            for path in self.files:
                job = self._prepare(path, known, applied, manifest)
                if job is None:
                    bar.update(path.stat().st_size)
                    continue
                task = _PlanTask(path, job.header, job.settings, self._key, self.summary.run_id,
                                 self.options.include_content, job.handled)
                waiting.append((job, pool.submit(_plan_in_worker, task)))
                backlog += job.size
                while (len(waiting) > jobs and backlog > WORKER_BACKLOG_BYTES) or (waiting and waiting[0][1].done()):
                    finish_first()
            while waiting:
                finish_first()

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
        header = peek_header(path)
        if isinstance(header, str):
            summary.not_sessions.append({"file": str(path), "reason": header})
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
        summary.user_retain_modes.add(settings.user_retain.mode)
        shape = settings_hash(settings) + (":catch-up" if self.options.catch_up else "")
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
        return _Job(path, stat.st_size, stat.st_mtime_ns, header, settings, shape, handled)

    def _plan_here(self, job: _Job) -> SessionPlan | str:
        try:
            return plan_session(job.path, job.header, job.settings, self._redactor(job.settings),
                                self.summary.run_id, self.options.include_content, self.times, job.handled)
        except CursorNotOnPath as exc:
            return str(exc)

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
        self._account(plan)
        rows_json = []
        for row in plan.rows:
            data = row.as_json()
            data["status"] = self._status(data, applied)
            manifest.write_json(data)
            data.pop("content", None)
            rows_json.append(data)
        self._count_rows(rows_json)
        if self.uploader is not None:
            self._send(plan, applied)
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

    def _send(self, plan: SessionPlan, applied: dict[tuple[str, str], tuple[str, str]]) -> None:
        assert self.uploader is not None
        for planned in plan.items:
            done = applied.get((planned.bank_id, planned.item.document_id))
            if done and done[0] == planned.item_hash and done[1] in ("sent", "confirmed"):
                continue
            item = planned.item
            row = DocumentRow(
                bank_id=planned.bank_id, document_id=item.document_id, bank_role=planned.bank_role,
                source_path=str(plan.path), session_id=plan.session.session_id,
                content_hash=item.metadata["content_hash"], item_hash=planned.item_hash, tags=item.tags,
                metadata=item.metadata,
            )
            payload = item.payload()
            self.uploader.add(row, payload, len(item.content.encode("utf-8")) + 1024)

    def _owner(self, session_id: str, path: str) -> str:
        """The one file that imports a session id: the first path, in sort order, of those that hold it."""
        if self._session_files is None:
            self._session_files = {}
            for known_path, session in self.ledger.source_sessions().items():
                if Path(known_path).is_file():
                    self._session_files.setdefault(session, set()).add(known_path)
        paths = self._session_files.setdefault(session_id, set())
        paths.add(path)
        return min(p for p in paths if p == path or Path(p).is_file())

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
        if done and done[0] == row["item_sha256"] and done[1] in ("sent", "confirmed"):
            return "unchanged"
        return "planned"

    def _reuse(self, rows: list[dict[str, Any]], manifest: ManifestWriter) -> None:
        """An unchanged source: its rows from the run that last read it (statuses refreshed), with this run's id."""
        for data in rows:
            data["run_id"] = self.summary.run_id
            manifest.write_json(data)
        self._count_rows(rows)

    def _count_rows(self, rows: list[dict[str, Any]]) -> None:
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
                    summary.skip_reasons[row["decision"]["reason"].split(" mode: ", 1)[-1]] += 1
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
        summary.messages_kept += plan.kept
        summary.messages_dropped.update(plan.dropped)
        summary.blocks_removed.update(plan.removed)
        summary.redactions.update(plan.redactions)
