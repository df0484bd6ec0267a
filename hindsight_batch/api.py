"""The library's operations, one function per thing a program (or the CLI) asks for.

Each takes plain typed arguments, does the work and returns a typed result; none prints. The heavy modules
(the pipeline, duckdb, httpx) are imported inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hindsight_batch.errors import UsageError
from hindsight_batch.session.discovery import find_session_files

if TYPE_CHECKING:
    from hindsight_batch.commands.forget import ForgetReport
    from hindsight_batch.commands.verify import StaleDocument, VerifyReport
    from hindsight_batch.config.model import Settings
    from hindsight_batch.importing.accounting import ImportSummary
    from hindsight_batch.interfaces import SessionSource
    from hindsight_batch.ledger import Ledger
    from hindsight_batch.prune import PruneResult
    from hindsight_batch.queue.flush import FlushReport
    from hindsight_batch.routing.models import MemoryRouteDecision
    from hindsight_batch.sinks.hindsight import HindsightClient

LiveRetained = Literal["after", "skip", "include"]


def load_settings(config_file: Path | None = None, cwd: str | Path | None = None,
                  flags: dict[str, Any] | None = None) -> Settings:
    """The settings a session in ``cwd`` gets (``None``: the global settings): the discovered config files, the
    extension's files, the environment, then ``config_file`` and ``flags`` (dotted keys such as
    ``"userRetain.mode"``; ``None`` values are ignored). Raises :class:`~hindsight_batch.errors.ConfigError`."""
    from hindsight_batch.config import ConfigResolver

    resolver = ConfigResolver(config_file=config_file, flags=flags or {})
    return resolver.for_cwd(None if cwd is None else str(cwd)).settings


@dataclass(frozen=True)
class ImportOptions:
    """What ``import`` is asked to do; the defaults are a dry run of the default session root."""

    paths: Sequence[Path] = ()  # session files or folders; empty: the default session root
    manifest: Path | None = None  # write the manifest (JSONL) here
    include_content: bool = False  # each item's exact content in the manifest
    branches: Literal["current", "all"] | None = None  # None: import.branches from the settings
    compaction: Literal["full", "context"] | None = None
    mode: Literal["explicit-only", "router"] | None = None  # overrides userRetain.mode
    since: datetime | None = None  # only sessions modified at or after this (aware) time
    cwd_filter: str | None = None
    project_filter: str | None = None
    state_dir: Path | None = None  # the ledger folder; None: $XDG_STATE_HOME/hindsight-batch
    config_file: Path | None = None
    apply: bool = False  # upload (retainBatch); False: a dry run
    wait: bool = False  # with apply: wait until the server processed every request
    wait_timeout: float = 600.0
    delete_stale: bool = False  # list (dry run) or delete (apply) the plan's stale server documents
    live_retained: LiveRetained = "after"
    catch_up: bool = False
    respect_switches: bool | None = None  # the live extension's switches; None: on with catch_up, else reported only
    max_seconds: float | None = None
    jobs: int | Literal["auto"] = 1  # "auto": by the files' total size and the usable CPUs (importing/parallelism.py)
    progress: bool = False  # a progress bar on stderr
    from_run: str | None = None  # with apply: send exactly what this dry run planned (checked first), nothing else
    extension: str | None = None  # whose bank rule applies: hindsight-pi (hpi), pi-hindsight or none (--extension)
    path_map: Mapping[str, str] | None = None  # moved repositories, OLD folder -> where it is now (--map)


@dataclass(frozen=True)
class StaleDocuments:
    """The server's documents of planned sessions that the current plan no longer has."""

    documents: list[StaleDocument]
    deleted: int  # with apply: how many were deleted; else how many would be
    applied: bool

    def to_dict(self) -> dict[str, Any]:
        return {"documents": self.documents, "deleted": self.deleted, "applied": self.applied}


@dataclass(frozen=True)
class ImportResult:
    """How an import went: the run's :class:`~hindsight_batch.importing.accounting.ImportSummary` and what
    :func:`run_import` did around it; :meth:`to_dict` is the ``import --json`` document."""

    summary: ImportSummary
    manifest: Path | None
    stale: StaleDocuments | None = None
    ignored_project_keys: list[str] = field(default_factory=list)  # per-project keys a project file may not set
    earlier_runs_settled: dict[str, int] = field(default_factory=dict)  # with apply: what earlier runs left open

    @property
    def run_id(self) -> str:
        return self.summary.run_id

    @property
    def mode(self) -> str:
        """``dry-run`` or ``apply``."""
        return self.summary.mode

    @property
    def files(self) -> int:
        return self.summary.files

    @property
    def sessions(self) -> int:
        return self.summary.sessions

    @property
    def chunks(self) -> int:
        return self.summary.chunks

    @property
    def statuses(self) -> dict[str, int]:
        """Manifest rows by status, in name order."""
        return dict(sorted(self.summary.statuses.items()))

    @property
    def failed_files(self) -> int:
        return len(self.summary.failed_files)

    @property
    def upload_failed(self) -> int:
        return self.summary.upload["failed"] if self.summary.upload else 0

    @property
    def refused(self) -> int:
        """``--from-run``: sessions refused (changed since the review)."""
        return self.summary.from_run["refused_total"] if self.summary.from_run else 0

    @property
    def without_bank(self) -> int:
        """Sessions skipped for want of a bank (the summary's ``without_bank_fix`` says the fix)."""
        return len(self.summary.without_bank)

    @property
    def ok(self) -> bool:
        """No file failed, no item was refused, no reviewed session was refused and no session was skipped for
        want of a bank (``import`` exits 1 otherwise)."""
        return not (self.failed_files or self.upload_failed or self.refused or self.without_bank)

    @property
    def data(self) -> dict[str, Any]:
        """The whole ``import --json`` document (:meth:`to_dict`): kept for compatibility with programs written
        before the typed :attr:`summary`, which is the form to use."""
        return self.to_dict()

    def to_dict(self) -> dict[str, Any]:
        """The ``import --json`` document."""
        data = self.summary.to_dict()
        data["ignored_project_keys"] = self.ignored_project_keys
        if self.summary.upload is not None and self.earlier_runs_settled:
            data["upload"] = {**self.summary.upload, "earlier_runs_settled": self.earlier_runs_settled}
        if self.stale is not None:
            data["stale"] = self.stale.to_dict()
        return data


def run_import(options: ImportOptions, *, sessions: SessionSource | None = None) -> ImportResult:
    """Plan retain items from Pi session files, write the manifest and the ledger, and with ``apply`` upload
    them. ``sessions``: where the session files named by ``options.paths`` are found (default: the files and
    folders themselves, :mod:`hindsight_batch.session.discovery`). Raises
    :class:`~hindsight_batch.errors.HindsightBatchError` subclasses (usage, configuration, server)."""
    from hindsight_batch.config import ConfigResolver
    from hindsight_batch.importing.importer import Importer, PipelineOptions
    from hindsight_batch.importing.live import LiveCheck, unreachable
    from hindsight_batch.ledger.state import open_ledger
    from hindsight_batch.sinks.client import client_for
    from hindsight_batch.sinks.manifest import ManifestWriter

    if options.wait and not options.apply:
        raise UsageError("--wait goes with --apply")
    if options.from_run is not None and not options.apply:
        raise UsageError("--from-run goes with --apply: it sends what that dry run planned (a dry run is the review)")
    if options.from_run is not None and (options.delete_stale or options.catch_up):
        # Both act on more than the reviewed plan (deleting server documents; a scheduled run's own selection).
        raise UsageError(f"--from-run sends exactly what was reviewed; it does not go with "
                         f"{'--delete-stale' if options.delete_stale else '--catch-up'}")
    flags = {"import.branches": options.branches, "import.compaction": options.compaction,
             "userRetain.mode": options.mode, "pathMap": dict(options.path_map) if options.path_map else None,
             "extension": {"hpi": "hindsight-pi"}.get(options.extension or "", options.extension)}
    resolver = ConfigResolver(config_file=options.config_file, flags=flags)
    settings = resolver.for_cwd(None).settings  # a broken global config fails here, before any work
    # A source is a file, not a spelling (S4); --from-run without paths: the run's own sources.
    reviewing = options.from_run is not None
    find = sessions.find_session_files if sessions is not None else find_session_files
    files = find(list(options.paths), resolve=True) if options.paths or not reviewing else []
    apply = options.apply
    # The live-retained check asks the server read-only questions, also in a dry run (3 s, one attempt there).
    live = LiveCheck(options.live_retained, lambda: client_for(settings) if apply
                     else client_for(settings, timeout=3, max_attempts=1), dry_run=not apply,
                     probe=None if apply else lambda: unreachable(settings.base_url, timeout=3), env=resolver.env)
    pipeline = PipelineOptions(
        manifest=options.manifest, include_content=options.include_content, since=options.since,
        cwd_filter=options.cwd_filter, project_filter=options.project_filter, progress=options.progress,
        apply=apply, wait=options.wait, wait_timeout=options.wait_timeout, catch_up=options.catch_up,
        respect_switches=options.respect_switches, max_seconds=options.max_seconds, jobs=options.jobs, live=live,
    )
    writer = ManifestWriter(options.manifest)  # a bad manifest path fails here, before the ledger folder is made
    stale: StaleDocuments | None = None
    reconciled = None
    try:
        with open_ledger(options.state_dir) as ledger, contextlib.closing(live):
            if options.from_run is not None:
                from hindsight_batch.importing.from_run import load_reviewed, select_files

                reviewed = load_reviewed(ledger, options.from_run)  # an unknown run: exit 2, before any request
                files = select_files(reviewed, files, [Path(path).resolve() for path in options.paths])
                pipeline = replace(pipeline, reviewed=reviewed)
            if apply or options.delete_stale:
                from hindsight_batch.sinks.upload import Uploader, reconcile

                with client_for(settings) as client:
                    client.preflight()  # unreachable or unauthorized: exit 4 before any work, even with nothing to send
                    reconciled = reconcile(ledger, client) if apply else None

                    def uploader(run_id: str) -> Uploader:
                        return Uploader(client, ledger, run_id, settings.upload)

                    summary = Importer(resolver, ledger, pipeline, files, uploader if apply else None, writer).run()
                    if options.delete_stale:
                        stale = delete_stale(ledger, client, apply)
            else:
                summary = Importer(resolver, ledger, pipeline, files, manifest=writer).run()
    finally:
        writer.close(complete=False)  # a no-op after the run renamed it into place
    return ImportResult(summary, options.manifest, stale, resolver.warnings, dict(reconciled or {}))


def delete_stale(ledger: Ledger, client: HindsightClient, apply: bool) -> StaleDocuments:
    """The server's documents of planned sessions that the plan no longer has; deleted (and marked
    ``stale-deleted`` in the ledger) with ``apply``."""
    from hindsight_batch.commands.verify import stale_documents

    found = stale_documents(ledger, client)
    deleted = 0
    if apply:
        for doc in found:
            if client.delete_document(doc["bank_id"], doc["document_id"]):
                deleted += 1
            ledger.set_status(doc["bank_id"], [doc["document_id"]], "stale-deleted", "import --delete-stale")
    return StaleDocuments(found, deleted if apply else len(found), apply)


def flush_queues(paths: Sequence[Path] = (), *, dry_run: bool = False, max_jobs: int | None = None,
                 max_seconds: float | None = None, config_file: Path | None = None) -> list[FlushReport]:
    """Drain retain queues to the server: ``paths`` (queue files, queue folders or project folders) or, when
    empty, every queue :func:`~hindsight_batch.queue.discovery.default_queue_roots` finds. ``dry_run`` checks
    and counts without network or writes. One report per queue file."""
    from hindsight_batch.queue.discovery import default_queue_roots
    from hindsight_batch.queue.flush import QueueFlusher
    from hindsight_batch.queue.store import queue_files
    from hindsight_batch.redaction.redactor import Redactor
    from hindsight_batch.sinks.client import client_for

    settings = load_settings(config_file)
    files = list(queue_files(list(paths) or default_queue_roots()))
    redactor = Redactor(private_hosts=tuple(settings.redaction.private_hosts))
    deadline = time.monotonic() + max_seconds if max_seconds is not None else None
    if dry_run:
        flusher = QueueFlusher(None, redactor, settings.upload, dry_run=True, max_jobs=max_jobs)
        return [flusher.flush(path) for path in files]
    with client_for(settings) as client:
        if files:
            client.version()  # unreachable or unauthorized: exit 4 before touching a queue
        flusher = QueueFlusher(client, redactor, settings.upload, max_jobs=max_jobs, deadline=deadline)
        return [flusher.flush(path) for path in files]


def prune_paths(paths: Sequence[Path] = (), *, confirm: bool = False, custom_types: Iterable[str] = (),
                backup_dir: Path | None = None, min_age: float = 1800.0, force: bool = False) -> list[PruneResult]:
    """Remove persisted recall messages from the session files under ``paths`` (default: the session root):
    :func:`hindsight_batch.prune.prune_file` on each, a preview unless ``confirm``. A file that cannot be read
    becomes a ``failed`` result, not an exception."""
    from hindsight_batch import prune

    files = find_session_files(list(paths))
    types = (*prune.DEFAULT_TYPES, *custom_types)
    return list(prune.iter_results(files, confirm=confirm, types=types, backup_dir=backup_dir, min_age=min_age,
                                   force=force))


def ledger_report(run_id: str | None = None, *, state_dir: Path | None = None) -> dict[str, Any]:
    """The ``report --json`` document: recent runs and, for ``run_id`` (default: the latest), its counts."""
    from hindsight_batch.commands.report import build_report
    from hindsight_batch.ledger.state import open_ledger

    with open_ledger(state_dir, runs_needed=True, reading=True) as ledger:
        return build_report(ledger, run_id)


def verify_documents(bank: str | None = None, *, state_dir: Path | None = None,
                     config_file: Path | None = None) -> VerifyReport:
    """Compare the server's documents with every document the ledger planned (see ``verify``); missing and
    mismatched ones are marked so that the next applied import sends them again."""
    from hindsight_batch.commands.verify import verify
    from hindsight_batch.ledger.state import open_ledger
    from hindsight_batch.sinks.client import client_for

    settings = load_settings(config_file)
    with open_ledger(state_dir, runs_needed=True) as ledger, client_for(settings) as client:
        client.preflight()
        return verify(ledger, client, bank)


def forget_applied_run(run_id: str, *, confirm: bool = False, force: bool = False, state_dir: Path | None = None,
           config_file: Path | None = None) -> ForgetReport:
    """Undo an applied run: its documents on the server, deleted with ``confirm`` (shared ones only with
    ``force``). The forget itself is recorded in the ledger as a run."""
    from hindsight_batch.commands.forget import forget_run
    from hindsight_batch.importing.importer import new_run_id
    from hindsight_batch.ledger.state import open_ledger
    from hindsight_batch.sinks.client import client_for

    settings = load_settings(config_file)
    with open_ledger(state_dir) as ledger, client_for(settings) as client:
        client.preflight()
        by_run = new_run_id()
        ledger.start_run(by_run, "forget", "confirm" if confirm else "preview")
        report = forget_run(ledger, client, run_id, confirm=confirm, force=force, by_run=by_run)
        ledger.finish_run(by_run, "ok", {"forget": run_id, "counts": report.to_dict()["counts"]})
    return report


def preview_route(text: str, *, context: str | None = None, cwd: Path | None = None, mode: str | None = None,
                  strategy: str | None = None, config_file: Path | None = None,
                  role: str = "user") -> MemoryRouteDecision:
    """How ``import`` would route ``text`` for a session in ``cwd`` (default: here): the same operation, no
    writes. ``text`` is a chunk's projected records, or one message of ``role`` (default the user's)."""
    from hindsight_batch.config import ConfigResolver
    from hindsight_batch.plan.banks import BankResolver, Unreproducible, with_project_bank
    from hindsight_batch.plan.items import base_tags, project_bank_id, session_scope
    from hindsight_batch.routing import route_text
    from hindsight_batch.session.model import SessionHeader

    folder = str((cwd or Path.cwd()).resolve())
    resolver = ConfigResolver(config_file=config_file, flags={"userRetain.mode": mode, "routing.strategy": strategy})
    resolved = resolver.for_cwd(folder)
    settings = resolved.settings
    scope = session_scope(SessionHeader("route-preview", 3, None, folder, None), "", settings)
    with contextlib.suppress(Unreproducible):  # the preview then shows this tool's own rule
        settings = with_project_bank(settings, BankResolver(resolver.env).derive(resolved, folder, scope.project)[0])
    decision, _ = route_text(
        settings, text, role=role, context=context, cwd=folder, project_bank_id=project_bank_id(scope, settings),
        base_tags=base_tags(scope, settings),
    )
    return decision


def write_review_page(run_id: str | None = None, output: Path | None = None, *,
                      state_dir: Path | None = None) -> Path:
    """Write the review page of ``run_id`` (default: the latest run that planned chunks) to ``output`` (default
    ``review-<run>.html`` in the current folder), mode 0600; returns its path (see :mod:`hindsight_batch.review`)."""
    from hindsight_batch.ledger.state import open_ledger
    from hindsight_batch.review import write_review

    with open_ledger(state_dir, runs_needed=True, reading=True) as ledger:
        return write_review(ledger.db, output, run_id)
