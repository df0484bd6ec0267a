"""Which session files an import plans: each file is skipped, its rows reused from the ledger, or planned.

In: a session file, the ledger's sources and sent documents, the run's options. Out: a :class:`Skip` (why, and the
manifest row of a switch that covers the session), a :class:`Reuse` (an unchanged source's rows) or a
:class:`Plan` (a :class:`SessionJob`: what planning needs). Why each file was left out goes to the summary here.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from hindsight_batch.config import ConfigResolver, Settings
from hindsight_batch.extension.catchup import CatchUpVerdict, cursor_verdict
from hindsight_batch.extension.records import queued_ids
from hindsight_batch.extension.switches import HpiSession, Switched, hpi_session
from hindsight_batch.importing.accounting import Accounting, ImportSummary, RowTally
from hindsight_batch.importing.duplicates import SessionOwners
from hindsight_batch.importing.from_run import RE_PLAN, Reviewed, file_sha256
from hindsight_batch.importing.sending import Applied, planned_status
from hindsight_batch.importing.shaping import SettingsShaper
from hindsight_batch.importing.switch_checks import SwitchChecks
from hindsight_batch.ledger import ReviewedSource, SourceState
from hindsight_batch.plan.banks import project_name
from hindsight_batch.plan.rows import switched_row
from hindsight_batch.session.names import source_name
from hindsight_batch.sinks.manifest import encode_line, encode_lines

if TYPE_CHECKING:
    from hindsight_batch.config import ResolvedConfig
    from hindsight_batch.importing.options import PipelineOptions
    from hindsight_batch.interfaces import RunLedger
    from hindsight_batch.plan.banks import BankChoice
    from hindsight_batch.plan.rows import LiveNote
    from hindsight_batch.session.model import SessionHeader

__all__ = ["FileSelection", "Plan", "Reuse", "SessionJob", "Skip", "Verdict", "header_text"]


class SessionJob(NamedTuple):
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


SkipReason = Literal["refused", "not-a-session", "filtered-out", "duplicate", "deadline", "switched-off", "no-bank",
                     "not-sent", "live-retained"]


@dataclass(frozen=True)
class Skip:
    """A file not planned; ``manifest_lines``: the row naming a switch that covers it (never its text)."""

    reason: SkipReason
    manifest_lines: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class Reuse:
    """An unchanged source: its rows as the run that last read it wrote them, statuses refreshed, this run's id."""

    name: str
    manifest_lines: list[bytes]
    tallies: list[RowTally]
    header: tuple[str, str] | None  # (path, header) to record: the ledger kept none for it
    seen: ReviewedSource | None  # a dry run: what it saw of the source (sha256 "": not recorded, hashed later)
    path: Path

    def reviewable(self) -> ReviewedSource | None:
        """What a dry run saw of the source, for --from-run; a hash the ledger did not keep is read now. Called
        once the rows are written: a file that cannot be hashed then fails alone, its rows tallied."""
        if self.seen is None or self.seen.sha256:
            return self.seen
        return self.seen._replace(sha256=file_sha256(self.path))


@dataclass(frozen=True)
class Plan:
    """A file to plan."""

    job: SessionJob


Verdict = Skip | Reuse | Plan  # what is done with a session file


class _Banked(NamedTuple):
    """A session with a bank: its configuration, the bank choice, its settings and their hash."""

    resolved: ResolvedConfig
    choice: BankChoice
    settings: Settings
    shape: str


@dataclass
class _Seen:
    """A file as first looked at: its stat, the ledger's record, its header (``recorded``: the ledger's)."""

    path: Path
    key: str
    stat: os.stat_result
    previous: SourceState | None
    header: SessionHeader
    recorded: bool
    sha256: str | None
    annotations: dict[str, Any] = field(default_factory=dict)


if TYPE_CHECKING:
    from hindsight_batch.session.model import header_from_text, header_text
    from hindsight_batch.session.reader import peek_header
else:  # loaded on first use: an import with nothing to read (an empty folder, a catch-up re-run) starts without them

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


class FileSelection:
    """Decides, file by file, what an import does with each session file (:meth:`select`)."""

    def __init__(self, resolver: ConfigResolver, ledger: RunLedger, options: PipelineOptions, summary: ImportSummary,
                 accounting: Accounting, files: list[Path], applied: Applied) -> None:
        """``applied``: what earlier runs sent (filled in when the run starts; reused rows' statuses come from it)."""
        self.resolver = resolver
        self.ledger = ledger
        self.options = options
        self.summary = summary
        self.accounting = accounting
        self.applied = applied
        self.known: dict[str, SourceState] = {}  # the ledger's sources, filled in when the run starts
        self.shaper = SettingsShaper(resolver, options)
        self.switches = SwitchChecks(resolver, options)
        self.owners = SessionOwners(ledger.source_sessions, frozenset(map(source_name, files)))  # (resolved)
        self._deadline = time.monotonic() + options.max_seconds if options.max_seconds is not None else None

    def select(self, path: Path, hash_here: bool = True) -> Verdict:
        """What is done with ``path``. The checks' order is the rules': --from-run's refusals first, then filters,
        duplicates and catch-up's deadline; the switches kept outside the file before an unchanged source is reused
        (they change without the file changing); what is read from the file (its switches, cursor, the live check,
        queued records) only for a file to plan. ``hash_here``: the file's bytes are hashed now (else by the worker
        that plans it, before it reads the file)."""
        self.summary.files += 1
        seen = self._look(path)
        if isinstance(seen, Skip):
            return seen
        left_out = self._left_out(seen)
        if left_out is not None:
            return left_out
        luxus = self.switches.luxus_session(seen.header, path)
        switched = self.switches.outside(seen.header, luxus)
        if switched is not None:
            skip = self._switched(seen, switched)
            if skip is not None:
                return skip
            seen.annotations["switch"] = switched.as_json()
        banked = self._banked(seen, luxus.tags)
        if isinstance(banked, Skip):
            return banked
        reviewed = self.options.reviewed
        if reviewed is not None and banked.shape != reviewed.sources[seen.key].settings_hash:
            self._count(banked)
            reviewed.refuse(path, f"the configuration changed since the review; {RE_PLAN}")
            return Skip("refused")
        return self._reuse(seen, banked) or self._to_plan(seen, banked, hash_here)

    def _look(self, path: Path) -> _Seen | Skip:
        """The file's stat and header: an unchanged source's as the ledger recorded it (a re-run over many files
        opens none of them), else the file's own, peeked at; --from-run checks the file's bytes instead, so it reads
        them. A file that cannot be read (permissions, gone) raises: it fails alone."""
        key = source_name(path)
        reviewed = self.options.reviewed
        sha256: str | None = None
        if reviewed is not None:  # a file that is not what the review saw is refused, never planned again
            problem = reviewed.changed(path)
            if problem is not None:
                reviewed.refuse(path, problem)
                return Skip("refused")
            sha256 = reviewed.sources[key].sha256
        stat = path.stat()
        previous = self.known.get(key)
        recorded = self._recorded_header(previous, stat) if reviewed is None else None
        header = recorded if recorded is not None else peek_header(path)
        if isinstance(header, str):
            self.accounting.not_a_session(path, stat.st_size, header)
            return Skip("not-a-session")
        return _Seen(path, key, stat, previous, header, recorded is not None, sha256)

    @staticmethod
    def _recorded_header(previous: SourceState | None, stat: os.stat_result) -> SessionHeader | None:
        """The header the ledger recorded for a source whose size and modification time are those recorded: the
        test by which its rows are reused unread. None: the file is to be peeked at."""
        if previous is None or (previous.size, previous.mtime_ns) != (stat.st_size, stat.st_mtime_ns):
            return None
        return header_from_text(previous.header)

    def _left_out(self, seen: _Seen) -> Skip | None:
        """Filtered out, a duplicate of another file's session, or past catch-up's deadline; or None."""
        summary = self.summary
        if not self._wanted(seen.header, seen.stat.st_mtime):
            summary.filtered_out += 1
            return Skip("filtered-out")
        owner = self.owners.owner(seen.header.id, seen.key)
        if owner != seen.key:
            summary.duplicates.append({"file": seen.key, "same_session_as": owner})
            return Skip("duplicate")
        if self.options.catch_up and self._deadline is not None and time.monotonic() >= self._deadline:
            summary.stopped_early = True
            return Skip("deadline")
        return None

    def _wanted(self, header: SessionHeader, mtime: float) -> bool:
        """Whether the session passes --since, --cwd and --project."""
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

    def _switched(self, seen: _Seen, switched: Switched, whole: bool = True) -> Skip | None:
        """A session a switch covers, reported in the summary. With the switches respected and the whole session
        covered, it is left out: one manifest row with its id and the reason, never its text."""
        respected = self.options.switches_respected
        self.summary.switched_off.append({"file": seen.key, "session_id": seen.header.id, **switched.as_json(),
                                          "whole_session": whole, "respected": respected})
        if not (whole and respected):
            return None
        row = switched_row(self.summary.run_id, seen.key, seen.header.id, switched)
        return Skip("switched-off", (encode_line(row),))

    def _banked(self, seen: _Seen, session_tags: tuple[str, ...]) -> _Banked | Skip:
        """The session's bank and settings; a session without a project bank, or (with --apply) whose bank is this
        tool's own, which no extension reads, is skipped and said."""
        summary, key, header = self.summary, seen.key, seen.header
        resolved, choice, shaped = self.shaper.for_session(header, seen.path, session_tags)
        if shaped is None or choice.bank_id is None:
            summary.sessions_skipped.append({"file": key, "reason": f"no project bank: {choice.skip}"})
            summary.without_bank.append({"file": key, "cwd": header.cwd or "", "reason": choice.skip or "",
                                         "fix": choice.fix or ""})
            return Skip("no-bank")
        if choice.unnamed:  # this tool's own bank: planned and said; never sent
            summary.bank_unnamed.append({"file": key, "bank": choice.bank_id, "reason": choice.unnamed})
            if self.options.apply:
                summary.sessions_skipped.append({"file": key, "reason": f"not sent: {choice.unnamed}"})
                summary.without_bank.append({"file": key, "cwd": header.cwd or "", "reason": choice.unnamed,
                                             "fix": "--extension hpi|pi-hindsight, or a bank (bankId)"})
                return Skip("not-sent")
        return _Banked(resolved, choice, *shaped)

    def _count(self, banked: _Banked) -> None:
        """A session that is imported (reused or read), not one a switch leaves out."""
        bank_id = banked.choice.bank_id or ""
        seen = self.summary.banks.setdefault(bank_id, {"sessions": 0, "why": banked.choice.why})
        seen["sessions"] += 1
        self.summary.user_retain_modes.add(banked.settings.user_retain.mode)
        self.summary.sessions += 1

    def _reuse(self, seen: _Seen, banked: _Banked) -> Reuse | None:
        """An unchanged source (same size, modification time and settings) whose rows the ledger can give back;
        None when it is to be read (always with --from-run or --include-content; with --apply, while anything of
        it is still to send, e.g. after a kill)."""
        previous, stat, options = seen.previous, seen.stat, self.options
        if (options.reviewed is not None or previous is None or options.include_content
                or (previous.size, previous.mtime_ns, previous.settings_hash)
                != (stat.st_size, stat.st_mtime_ns, banked.shape)):
            return None
        reused = self._reused_rows(seen.key, previous.last_run_id)
        if reused is None or (options.apply and any(t.status == "planned" for t in reused[1])):
            return None
        self._count(banked)
        self.summary.unchanged_files += 1
        reviewable = None
        if not options.apply:  # what the review of this dry run saw: the source as last read
            reviewable = ReviewedSource(seen.key, stat.st_size, stat.st_mtime_ns, previous.sha256 or "",
                                        banked.shape, previous.last_run_id)
        # A source recorded by a version that did not keep headers: recorded now, so the next run need not peek.
        header = None if seen.recorded else (seen.key, header_text(seen.header))
        return Reuse(seen.key, reused[0], reused[1], header, reviewable, seen.path)

    def _reused_rows(self, key: str, run_id: str) -> tuple[list[bytes], list[RowTally]] | None:
        """An unchanged source's rows from the run that last read it, statuses refreshed and with this run's id, as
        manifest lines and tallies. None when one of them cannot be given back (a ledger edited by hand: text that
        is not JSON, a decision that is not one, no status): the source is then read again, which records its rows
        anew, rather than failing on every run."""
        try:
            rows = self.ledger.latest_rows(key, run_id)  # fresh from the ledger: ours to change
            for row in rows:
                row["run_id"] = self.summary.run_id
                if row["status"] in ("planned", "unchanged"):
                    row["status"] = planned_status(self.applied, row["bank_id"], row["document_id"],
                                                   row["item_sha256"])
            tallies = [RowTally.of(row) for row in rows]
            return (encode_lines(rows), tallies) if all(tally.is_whole() for tally in tallies) else None
        except (ValueError, LookupError, TypeError, AttributeError):
            return None

    def _to_plan(self, seen: _Seen, banked: _Banked, hash_here: bool) -> Skip | Plan:
        """A source to read: hindsight-pi's switches in the file, catch-up's cursor, the live check and the records
        hindsight-pi still queues decide what of it is planned (an unchanged source was judged when it was read)."""
        hpi = hpi_session(seen.path)
        handled = self._in_file_switch(seen, hpi)
        if isinstance(handled, Skip):
            return handled
        settings = banked.settings
        if hpi is not None and hpi.tags:  # the session's tags, as message_end adds sessionTags(entries)
            settings = settings.model_copy(update={"constant_tags": [*settings.constant_tags, *hpi.tags]})
        if self.options.catch_up:
            handled = self._cursor(seen, handled)
        self._count(banked)
        live_note: LiveNote | None = None
        live = self.options.live
        if live is not None:  # asked only for a source that is read again (hindsight_batch/importing/live.py)
            decision = live.decide(settings.banks.project.bank_id or "", banked.resolved.family, seen.header.id,
                                   seen.path, seen.header.cwd)
            self.summary.live_retained[decision.decision] += 1
            self.summary.live_unchecked = self.summary.live_unchecked or live.problem
            live_note = decision.as_json()
            if decision.decision == "skip":
                self.summary.sessions_skipped.append({"file": seen.key, "reason": decision.note})
                return Skip("live-retained")
            handled = decision.handled(handled)
        if live is None or live.mode != "include":
            handled = self._queued(seen, handled)
        # The bytes' hash, for the next --from-run: read before planning reads the file (a change in between
        # makes the recorded hash stale, so that --from-run refuses the file: the safe side).
        sha256 = seen.sha256
        if not sha256 and hash_here:
            sha256 = file_sha256(seen.path)
        return Plan(SessionJob(seen.path, seen.stat.st_size, seen.stat.st_mtime_ns, seen.header, settings,
                               banked.shape, handled, banked.choice.why, live_note, sha256,
                               seen.annotations or None))

    def _in_file_switch(self, seen: _Seen, hpi: HpiSession | None) -> CatchUpVerdict | Skip | None:
        """hindsight-pi's ``hindsight-meta`` entries: retention off for every message leaves the session out (the
        switches respected); off for some leaves those messages out. What is already handled, or the skip."""
        if hpi is not None and hpi.all_off:
            off = Switched("hpi-session", "hindsight-pi: /hindsight:toggle-retain turned retention off before "
                                          "every message of this session (hindsight-meta retained:false)")
            skip = self._switched(seen, off)
            if skip is not None:
                return skip
            seen.annotations["switch"] = off.as_json()
        elif hpi is not None and hpi.off:
            part = Switched("hpi-session", f"hindsight-pi: {len(hpi.off)} of {hpi.messages} message(s) were "
                                           "written while /hindsight:toggle-retain had retention off")
            self._switched(seen, part, whole=False)
            seen.annotations["switch"] = part.as_json()
            if self.options.switches_respected:
                return CatchUpVerdict(True, switched_off=hpi.off)
        return None

    def _cursor(self, seen: _Seen, handled: CatchUpVerdict | None) -> CatchUpVerdict:
        """Catch-up: what the live extension's cursor says it retained already, with the messages a switch left
        out; a cursor that cannot be used is said (summary, manifest rows)."""
        cursor = cursor_verdict(seen.header.cwd, seen.path, self.resolver.env)
        if cursor.note:
            self.summary.cursor_fallbacks.append({"file": seen.key, "note": cursor.note})
            seen.annotations["cursor"] = cursor.note
        return cursor._replace(switched_off=handled.switched_off if handled else frozenset())

    def _queued(self, seen: _Seen, handled: CatchUpVerdict | None) -> CatchUpVerdict | None:
        """hindsight-pi's records still queued for this session (its last flush failed): ``flush`` sends them, so
        their entries are left out here (hindsight_batch/extension/records.py), and the queue is named."""
        queued = queued_ids(seen.path, seen.header.id, self.resolver.env)
        if queued is None or not (queued.ids or queued.unplaced):
            return handled
        note = (f"{len(queued.ids)} message(s) wait in hindsight-pi's queue {queued.path} (flush sends them): left "
                "out" + (f"; {queued.unplaced} queued record(s) match no entry" if queued.unplaced else ""))
        self.summary.queued_by_extension.append({"file": seen.key, "queue": str(queued.path),
                                                 "left_out": len(queued.ids), "unplaced": queued.unplaced})
        seen.annotations["queued"] = note
        base = handled or CatchUpVerdict(True)
        return base._replace(handled_ids=base.handled_ids | queued.ids)

    def review_settings_changed(self, reviewed: Reviewed, files: list[Path]) -> bool:
        """--from-run: whether any source's settings differ from the review's; then every source is refused
        (nothing is sent: the review was of another configuration)."""
        changed: list[str] = []
        for path in files:
            try:
                header = peek_header(path)
            except OSError:
                continue  # refused by name when it is reached
            if isinstance(header, str):
                continue
            _, _, shaped = self.shaper.for_session(header, path, self.switches.luxus_session(header, path).tags)
            name = source_name(path)
            if shaped is None or shaped[1] != reviewed.sources[name].settings_hash:
                changed.append(name)
        if changed:
            reviewed.configuration_changed = True
            why = (f"the configuration changed since the review (the settings of {len(changed)} session(s) differ "
                   f"from those of run {reviewed.run_id}); {RE_PLAN} with the current configuration")
            for path in files:
                reviewed.refuse(path, why)
        return bool(changed)
