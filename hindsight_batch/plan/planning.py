"""Planning one session file: read it, keep what retention allows, chunk it, route each chunk, and describe the
retain items and manifest rows that would follow (:func:`plan_session`). Pure: no ledger, no network, no output.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.timestamps import parse_timestamp, utc_timestamp, valid_timestamp
from hindsight_batch.config import Settings
from hindsight_batch.extension.catchup import CatchUpVerdict
from hindsight_batch.plan.chunking import Chunk, chunk_nodes, joined_size
from hindsight_batch.plan.items import (
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
)
from hindsight_batch.plan.rows import ManifestRow
from hindsight_batch.redaction.redactor import Findings, Redactor
from hindsight_batch.retention.records import EntryOutcome, RecordMaker, RecordStore
from hindsight_batch.retention.stagetimes import StageTimes
from hindsight_batch.routing import RoutingStrategy, route_content, strategy_for
from hindsight_batch.session.model import EntryNode, SessionFile, SessionHeader
from hindsight_batch.session.names import source_name
from hindsight_batch.session.reader import read_session
from hindsight_batch.session.tree import branch_segments, context_view


@dataclass
class PlannedItem:
    item: RetainItem
    bank_id: str
    bank_role: str
    item_hash: str


@dataclass
class SessionPlan:
    path: Path
    session: SessionFile  # without its entry index, which is let go once the chunks are planned
    entries: int = 0
    rows: list[ManifestRow] = field(default_factory=list)
    items: list[PlannedItem] = field(default_factory=list)
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    removed: Counter[str] = field(default_factory=Counter)
    redactions: Counter[str] = field(default_factory=Counter)
    handled_note: str | None = None  # how the live extension's cursor was used, when it fell back


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
    progress: Callable[[int], None] | None = None,
) -> SessionPlan:
    """Plan one session. With ``handled`` (catch-up), messages the live extension already handled are left out
    of every window's content; the windows themselves keep their places, so document ids stay the same.
    ``progress(offset)`` hears how far the file has been read, every few MB."""
    store = RecordStore()
    try:
        t0 = time.perf_counter()
        inner = times.project + times.redact
        session = read_session(path, RecordMaker(settings, redactor, store, times), progress)
        elapsed = time.perf_counter() - t0 - (times.project + times.redact - inner)
        times.extra["read"] = times.extra.get("read", 0.0) + elapsed
        plan = SessionPlan(path, session, entries=len(session.entries))
        t1 = time.perf_counter()
        _plan_chunks(plan, header, settings, store, run_id, include_content, handled)
        # The index (a few hundred bytes an entry) is not needed past planning: let it go before the plan's rows
        # are encoded (a session of many short messages has hundreds of thousands of entries).
        session.entries = []
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
    scope = session_scope(header, source_name(plan.path), settings)
    session = _SessionContext(
        scope=scope, tags=base_tags(scope, settings), scopes=observation_scopes(scope, settings),
        project_bank_id=project_bank_id(scope, settings), settings=settings, store=store,
        strategy=strategy_for(settings), run_id=run_id, include_content=include_content,
    )
    counted = bytearray(len(plan.session.entries))  # by seq: an entry in two segments is counted once
    for segment, leaf, nodes in _segment_nodes(plan.session, settings):
        chunks = chunk_nodes(nodes, settings.import_.turns_per_chunk, settings.import_.max_chunk_bytes)
        per_chunk_dropped = _dropped_by_chunk(nodes, chunks)
        if handled is not None:
            done: set[int] = set()
            if segment == "main":
                done, note = _handled_seqs(nodes, handled)
                plan.handled_note = plan.handled_note or note
            off, held = handled.switched_off, handled.handled_ids
            for chunk in chunks:
                for reason, gone in (("handled-live", [n for n in chunk.nodes if n.seq in done or n.id in held]),
                                     ("switched-off", [n for n in chunk.nodes if n.seq not in done and n.id in off])):
                    if gone:
                        per_chunk_dropped.setdefault(chunk.window, Counter())[reason] += len(gone)
                        plan.dropped[reason] += len(gone)
                        seqs = {n.seq for n in gone}
                        chunk.nodes = [n for n in chunk.nodes if n.seq not in seqs]
                        chunk.size = joined_size(chunk.nodes)
            chunks = [c for c in chunks if c.nodes]
        for node in nodes:
            outcome = node.payload
            if not isinstance(outcome, EntryOutcome) or counted[node.seq]:
                continue
            counted[node.seq] = 1
            if outcome.removed:
                for reason, count in outcome.removed.items():  # (Counter.update costs more per call)
                    plan.removed[reason] += count
            if outcome.handle is not None:
                plan.kept += 1
            elif outcome.dropped:
                plan.dropped[outcome.dropped] += 1
        for chunk in chunks:
            _plan_chunk(plan, session, segment, leaf, chunk, per_chunk_dropped.get(chunk.window, Counter()))


def _instant(stamp: str | None) -> float | None:
    """An ISO timestamp as seconds since the epoch (UTC when it names no zone), or None."""
    value = parse_timestamp(stamp)
    return value.timestamp() if value is not None else None


def _until_seqs(path: list[EntryNode], until_stamp: str | None) -> set[int]:
    """The entries on the path up to the last one stamped no later than ``until_stamp`` (the last live retain)."""
    until = _instant(until_stamp)
    if until is None:
        return set()
    last = -1
    for i, node in enumerate(path):
        stamp = _instant(node.timestamp)
        if stamp is not None and stamp <= until:
            last = i
    return {node.seq for node in path[: last + 1]}


def _handled_seqs(path: list[EntryNode], handled: CatchUpVerdict) -> tuple[set[int], str | None]:
    """The entries at or before the live extension's retain cursor on the active path (the entry its fingerprints
    found, :mod:`hindsight_batch.extension.catchup`); or, with a time (``handled_until``), up to the last entry
    stamped no later than it. A cursor entry that is not on the active path falls back to the time, else to nothing
    handled, and says so (the note)."""
    if handled.handled_id is None:
        return _until_seqs(path, handled.handled_until), None
    positions = [i for i, node in enumerate(path) if node.id == handled.handled_id]
    if positions:
        return {node.seq for node in path[: positions[-1] + 1]}, None
    fallback = "the time of the last live retain" if handled.handled_until else "the whole session"
    return (_until_seqs(path, handled.handled_until),
            f"the retain cursor's last message is not on the active path: falling back to {fallback}")


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


@dataclass(frozen=True)
class _SessionContext:
    """What every chunk of one session shares."""

    scope: SessionScope
    tags: list[str]
    scopes: list[list[str]] | str | None
    project_bank_id: str
    settings: Settings
    store: RecordStore
    strategy: RoutingStrategy
    run_id: str
    include_content: bool


def _chunk_times(chunk: Chunk) -> tuple[str | None, str | None]:
    """ISO-8601 UTC of the chunk's first and last entry that has a valid timestamp. Each end is read only up to its
    first valid stamp: converting every entry's timestamp is a noticeable part of planning."""
    nodes = chunk.nodes
    first: str | None = None
    start = 0
    while start < len(nodes) and first is None:
        first = utc_timestamp(nodes[start].timestamp)
        start += 1
    last = first
    end = len(nodes)
    while end > start:  # the entries after the first one's, from the end
        end -= 1
        stamp = utc_timestamp(nodes[end].timestamp)
        if stamp is not None:
            last = stamp
            break
    return first, last


def _plan_chunk(
    plan: SessionPlan,
    session: _SessionContext,
    segment: str,
    leaf: EntryNode,
    chunk: Chunk,
    dropped: Counter[str],
) -> None:
    scope, tags, scopes, settings = session.scope, session.tags, session.scopes, session.settings
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
    joined = session.store.join(handles)
    content = joined.decode("utf-8")
    plan.redactions.update(findings.counts)
    digest = content_sha256(joined)
    context = session_context(scope)
    decision = route_content(
        settings,
        content,
        context=context,
        cwd=scope.cwd,
        project_bank_id=session.project_bank_id,
        session_file=scope.session_file,
        base_tags=tags,
        redactions=findings.counts,
        strategy=session.strategy,
    )
    first = plan.session.entries[chunk.nodes[0].seq]
    timestamp = valid_timestamp(first.timestamp) or valid_timestamp(scope.started)
    started_at, ended_at = _chunk_times(chunk)
    writing = [t for t in decision.targets if t.will_write]
    unwritten = "skipped" if decision.route == "skip" else "not-written"
    common: dict[str, Any] = dict(  # what each of the chunk's rows has (one per bank written, else one)
        run_id=session.run_id,
        source_file=scope.session_file,
        session_id=scope.session_id,
        leaf=leaf.id,
        segment=segment,
        chunk_index=chunk.window,
        first_entry_id=chunk.first_entry_id,
        last_entry_id=chunk.last_entry_id,
        turns=chunk.turns,
        project=scope.project,
        started_at=started_at,
        ended_at=ended_at,
        decision=decision,
        observation_scopes=scopes,
        content_sha256=digest,
        bytes=len(joined),
        messages_kept=len(chunk.nodes),
        messages_dropped=dict(dropped),
        blocks_removed=dict(removed),
        redactions=dict(findings.counts),
        fingerprints=sorted(findings.fingerprints),
        content=content if session.include_content else None,
    )
    if not writing:
        plan.rows.append(ManifestRow(**common, document_id=None, bank_role=None, bank_id=None, tags=tags,
                                     item_sha256=None, status=unwritten))
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
