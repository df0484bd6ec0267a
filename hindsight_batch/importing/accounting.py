"""An import's summary and the counting that fills it: files, sessions, lines, messages, chunks, routes, statuses.

The importer hands every outcome here (a session planned, its rows, a file that failed); nothing else writes the
summary's counters.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NotRequired, TypedDict

from hindsight_batch.redaction.messages import failure_reason
from hindsight_batch.session.names import source_name

if TYPE_CHECKING:
    from hindsight_batch.plan.planning import SessionPlan


class RowTally(NamedTuple):
    """What the summary counts of one manifest row: kept instead of the row while a session's rows are encoded."""

    status: str
    segment: str
    chunk_index: int
    route: str
    reason: str
    bank_role: str | None
    injection: bool = False  # routing flagged prompt injection in the chunk

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> RowTally:
        """The tally of a row as the manifest file has it (:meth:`~hindsight_batch.plan.rows.ManifestRow.as_json`)."""
        from hindsight_batch.routing.models import PROMPT_INJECTION

        decision = row["decision"]
        signals = decision.get("matchedSignals")
        injection = isinstance(signals, list) and PROMPT_INJECTION in signals
        return cls(row["status"], row["segment"], row["chunk_index"], decision["route"], decision["reason"],
                   row["bank_role"], injection)

    def is_whole(self) -> bool:
        """Each field of the type a manifest row gives it (a row read back from a ledger edited by hand may not)."""
        return (isinstance(self.status, str) and isinstance(self.segment, str) and type(self.chunk_index) is int
                and isinstance(self.route, str) and isinstance(self.reason, str)
                and (self.bank_role is None or isinstance(self.bank_role, str)))


class FileProblem(TypedDict):
    """A file that failed (``failed_files``) or a malformed line (``malformed``): where, and why in one line."""

    file: str
    line: int | None
    reason: str


class FileNote(TypedDict):
    """A file the summary lists, and why (not a session yet, a session skipped)."""

    file: str
    reason: str


class DuplicateSession(TypedDict):
    file: str
    same_session_as: str  # the file the session was first read from


class CursorFallback(TypedDict):
    file: str
    note: str  # why the retain cursor could not be used as it is


class WithoutBank(TypedDict):
    """A session skipped for want of a bank, and the exact fix."""

    file: str
    cwd: str
    reason: str
    fix: str


class BankUnnamed(TypedDict):
    """A session planned into this tool's own bank, which no live extension reads."""

    file: str
    bank: str
    reason: str


class QueuedByExtension(TypedDict):
    file: str
    queue: str
    left_out: int  # messages hindsight-pi's queue still holds, left for flush
    unplaced: int  # queued records that match no entry


class ProjectBank(TypedDict):
    sessions: int
    why: str  # how the bank was chosen


class UploadCounts(TypedDict):
    """What an applied import's requests came to (the summary's ``upload``)."""

    requests: int
    documents: dict[str, int]  # upload status -> documents
    failed: int  # items the server refused or lost: the run exits 1
    operations_still_open: int  # with --wait: not done when it timed out
    errors: list[str]
    earlier_runs_settled: NotRequired[dict[str, int]]  # what reconcile() settled before this run planned


class RefusedSession(TypedDict):
    file: str
    reason: str


class FromRunCounts(TypedDict):
    """``import --apply --from-run``: what was sent as reviewed and what was refused (the summary's ``from_run``)."""

    run: str
    sessions_sent: int
    items_as_reviewed: int
    items_sent: int
    items_already_on_server: int
    refused: list[RefusedSession]
    refused_total: int
    ignored_paths: int
    configuration_changed: bool


@dataclass
class ImportSummary:
    """How an import went, counted as it went (:class:`Accounting`); :meth:`to_dict` is the ``import --json``
    document's body, and the CLI's summary reads the same fields."""

    run_id: str
    mode: str
    user_retain_modes: set[str] = field(default_factory=set)
    files: int = 0
    sessions: int = 0
    unchanged_files: int = 0
    filtered_out: int = 0
    not_sessions: list[FileNote] = field(default_factory=list)  # empty files
    failed_files: list[FileProblem] = field(default_factory=list)
    duplicates: list[DuplicateSession] = field(default_factory=list)
    catch_up_skipped: list[dict[str, str]] = field(default_factory=list)
    sessions_skipped: list[FileNote] = field(default_factory=list)  # no bank, or retained live
    # Sessions a live extension's switch covers (hindsight_batch/extension/switches.py), left out or (import without
    # --respect-switches) reported only; and retain cursors that could not be used as they are (a fallback).
    switched_off: list[dict[str, Any]] = field(default_factory=list)
    cursor_fallbacks: list[CursorFallback] = field(default_factory=list)
    queued_by_extension: list[QueuedByExtension] = field(default_factory=list)  # hindsight-pi's queued records
    # Sessions skipped for want of a bank (the run exits 1), each with the exact fix; and sessions planned into
    # this tool's own bank because no live extension was configured or found (--apply does not send them).
    without_bank: list[WithoutBank] = field(default_factory=list)
    bank_unnamed: list[BankUnnamed] = field(default_factory=list)
    banks: dict[str, ProjectBank] = field(default_factory=dict)  # by project bank
    live_retained: Counter[str] = field(default_factory=Counter)  # decision → sessions
    live_unchecked: str | None = None
    stopped_early: bool = False
    bytes_read: int = 0
    entries: int = 0
    malformed_lines: list[FileProblem] = field(default_factory=list)  # the first MAX_LISTED
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
    prompt_injection: int = 0  # chunks in which routing flagged prompt injection (never the User Bank)
    items: Counter[str] = field(default_factory=Counter)  # by bank role
    statuses: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    jobs: int = 1  # processes that planned sessions (--jobs; "auto" chose this many)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    manifest: str | None = None
    ledger: str | None = None
    upload: UploadCounts | None = None
    from_run: FromRunCounts | None = None

    MAX_LISTED = 50

    @property
    def router_mode_on(self) -> bool:
        return "router" in self.user_retain_modes

    @property
    def switched_off_skipped(self) -> int:
        """Sessions a switch kept out whole (the others were imported, or lost only their switched-off messages)."""
        return sum(1 for s in self.switched_off if s["respected"] and s["whole_session"])

    @property
    def without_bank_fix(self) -> list[str]:
        """The fixes for the sessions skipped for want of a bank, each once."""
        return _bank_fix(self.without_bank)

    @property
    def shown_seconds(self) -> float:
        return round(self.seconds, 3)

    @property
    def mb_per_second(self) -> float | None:
        return round(self.bytes_read / 1e6 / self.seconds, 1) if self.seconds > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "mode": self.mode,
            "user_retain_mode": sorted(self.user_retain_modes),
            "router_mode_on": self.router_mode_on,
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
            "switched_off": self.switched_off[: self.MAX_LISTED],
            "switched_off_total": len(self.switched_off),
            "switched_off_skipped": self.switched_off_skipped,
            "cursor_fallbacks": self.cursor_fallbacks[: self.MAX_LISTED],
            "cursor_fallbacks_total": len(self.cursor_fallbacks),
            "queued_by_extension": self.queued_by_extension[: self.MAX_LISTED],
            "without_bank": self.without_bank[: self.MAX_LISTED],
            "without_bank_total": len(self.without_bank),
            "without_bank_fix": self.without_bank_fix,
            "bank_unnamed": self.bank_unnamed[: self.MAX_LISTED],
            "bank_unnamed_total": len(self.bank_unnamed),
            "project_banks": self.banks,
            "live_retained": by_name(self.live_retained),
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
            "messages_dropped": by_name(self.messages_dropped),
            "blocks_removed": by_name(self.blocks_removed),
            "redactions": by_name(self.redactions),
            "chunks": self.chunks,
            "routes": by_name(self.routes),
            "skip_reasons": by_name(self.skip_reasons),
            "prompt_injection_chunks": self.prompt_injection,
            "items_by_bank_role": by_name(self.items),
            "statuses": by_name(self.statuses),
            "seconds": self.shown_seconds,
            "jobs": self.jobs,
            "mb_per_second": self.mb_per_second,
            "stage_seconds": {k: round(v, 3) for k, v in self.stage_seconds.items()},
            "manifest": self.manifest,
            "ledger": self.ledger,
            "upload": self.upload,
            "from_run": self.from_run,
        }


class Accounting:
    """Fills an :class:`ImportSummary` from what the importer reports."""

    def __init__(self, summary: ImportSummary) -> None:
        self.summary = summary

    def file_failed(self, path: Path, exc: BaseException, line: int | None = None) -> None:
        """One file could not be read or planned: listed (file, line where known, reason; no traceback, no
        secret), never recorded as read (so the next run tries it again); the run goes on and exits 1."""
        reason = failure_reason(exc)
        other = getattr(exc, "filename", None) if isinstance(exc, OSError) else None
        if other is not None and os.fsdecode(other) != str(path):  # e.g. a config file of the session's project
            reason += f": {source_name(os.fsdecode(other))}"
        self.summary.failed_files.append({"file": source_name(path), "line": line, "reason": reason})

    def not_a_session(self, path: Path, size: int, problem: str) -> None:
        """A file whose header peek found no session: an empty file is not one yet, anything else failed."""
        if size == 0:
            self.summary.not_sessions.append({"file": source_name(path), "reason": problem})  # not written yet
        else:
            reason = "no readable session header" if problem == "empty file" else problem
            self.summary.failed_files.append({"file": source_name(path), "line": None, "reason": reason})

    def tallies(self, tallies: Iterable[RowTally]) -> None:
        """What a session's manifest rows count for: statuses, chunks, routes, skip reasons, items by bank role."""
        summary = self.summary
        seen_chunks: set[tuple[str, int]] = set()
        for row in tallies:
            summary.statuses[row.status] += 1
            chunk_key = (row.segment, row.chunk_index)
            if chunk_key not in seen_chunks:
                seen_chunks.add(chunk_key)
                summary.chunks += 1
                summary.routes[row.route] += 1
                if row.status == "skipped":
                    summary.skip_reasons[_without_mode(row.reason)] += 1
                summary.prompt_injection += row.injection
            if row.bank_role:
                summary.items[row.bank_role] += 1

    def session(self, plan: SessionPlan) -> None:
        """What reading and planning one session found."""
        summary = self.summary
        session = plan.session
        summary.bytes_read += session.size
        summary.entries += plan.entries
        summary.malformed_total += session.malformed_total
        for problem in session.malformed:
            if len(summary.malformed_lines) < ImportSummary.MAX_LISTED:
                summary.malformed_lines.append(
                    {"file": source_name(plan.path), "line": problem.lineno, "reason": problem.reason}
                )
        summary.glued_lines += len(session.glued_lines)
        summary.truncated_tails += int(session.truncated_tail)
        summary.invalid_utf8_lines += session.invalid_utf8_lines
        summary.surrogates_replaced += session.surrogates_replaced
        summary.messages_kept += plan.kept
        summary.messages_dropped.update(plan.dropped)
        summary.blocks_removed.update(plan.removed)
        summary.redactions.update(plan.redactions)


def by_name(counter: Mapping[str, int]) -> dict[str, int]:
    """A counter as the summary shows it: in name order."""
    return dict(sorted(counter.items()))


def _without_mode(reason: str) -> str:
    from hindsight_batch.routing.strategy import reason_without_mode

    return reason_without_mode(reason)


def _bank_fix(skipped: list[WithoutBank]) -> list[str]:
    """The fixes for the sessions skipped for want of a bank, each once: ``--map`` flags by the folders that are
    gone (the longest folder that holds several of them is not guessed: one flag per cwd)."""
    return list(dict.fromkeys(entry["fix"] for entry in skipped if entry.get("fix")))
