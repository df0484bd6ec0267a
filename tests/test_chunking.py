"""Turns, chunk limits, and windows that stay stable as a session grows (S4)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight_batch.config import Settings
from hindsight_batch.plan.chunking import chunk_nodes
from hindsight_batch.plan.planning import SessionPlan, plan_session
from hindsight_batch.redaction.redactor import Redactor
from hindsight_batch.retention.records import EntryOutcome
from hindsight_batch.retention.stagetimes import StageTimes
from hindsight_batch.session.model import EntryNode
from hindsight_batch.session.reader import peek_header
from tests.conftest import SessionBuilder


def node(seq: int, role: str, size: int) -> EntryNode:
    n = EntryNode(seq, seq + 2, f"n{seq}", None, "message", None)
    n.payload = EntryOutcome(role, None, Counter(), handle=seq, size=size)
    return n


def windows(nodes: list[EntryNode], turns: int, size: int) -> list[list[str]]:
    return [[n.id for n in c.nodes] for c in chunk_nodes(nodes, turns, size)]


def test_turns_start_at_user_messages_and_fill_chunks_by_count() -> None:
    nodes = [node(0, "assistant", 10)] + [node(i, "user" if i % 2 else "assistant", 10) for i in range(1, 9)]
    # turn 0 = n0 (before any user message), then (n1,n2), (n3,n4), (n5,n6), (n7,n8)
    assert windows(nodes, 2, 10_000) == [["n0", "n1", "n2"], ["n3", "n4", "n5", "n6"], ["n7", "n8"]]


def test_byte_limit_closes_a_chunk_and_an_oversized_turn_is_split_between_records() -> None:
    nodes = [node(0, "user", 40), node(1, "assistant", 40), node(2, "user", 30), node(3, "assistant", 100),
             node(4, "assistant", 100), node(5, "user", 10)]
    # 81 bytes fit; the second turn (30+100+100+2 bytes) is larger than 150 and is split at records.
    assert windows(nodes, 12, 150) == [["n0", "n1"], ["n2", "n3"], ["n4"], ["n5"]]


def plan(path: Path, settings: Settings | None = None) -> list[tuple[str, str]]:
    header = peek_header(path)
    assert not isinstance(header, str)
    result = plan_session(path, header, settings or Settings(), Redactor(b"k"), "run", False, StageTimes())
    return [(p.item.document_id, p.item.metadata["content_hash"]) for p in result.items]


def test_windows_keep_their_ids_and_hashes_as_the_session_grows(tmp_path: Path) -> None:
    settings = Settings.model_validate({"import": {"turnsPerChunk": 2}})
    b = SessionBuilder()
    for i in range(5):
        b.user(f"question {i} about the importer")
        b.assistant(f"answer {i}: changed the module")
    before = plan(b.write(tmp_path / "s.jsonl"), settings)
    for i in range(5, 8):
        b.user(f"question {i} about the importer")
        b.assistant(f"answer {i}: changed the module")
    after = plan(b.write(tmp_path / "s.jsonl"), settings)
    assert len(before) == 3 and len(after) == 4
    assert after[:2] == before[:2]  # full windows never change
    assert after[2][0] == before[2][0] and after[2][1] != before[2][1]  # the growing tail keeps its id


def test_document_ids_are_deterministic_and_name_session_role_segment_window(tmp_path: Path) -> None:
    b = SessionBuilder(session_id="abc")
    b.user("how does the importer name its documents?")  # (a bare greeting is now skipped as an acknowledgement)
    b.assistant("by session, bank role, segment and window")
    path = b.write(tmp_path / "s.jsonl")
    assert plan(path) == plan(path)
    assert plan(path)[0][0] == "pi-import:abc:project:main:w0000"


def test_a_chunks_times_are_its_first_and_last_valid_timestamps_whatever_lies_between() -> None:
    """started_at/ended_at of a manifest row: every mix of missing, unreadable, pre-1971 and valid timestamps over
    five entries gives what converting every entry gives (planning reads each end only up to its first stamp)."""
    import itertools

    from hindsight_batch.base.timestamps import utc_timestamp
    from hindsight_batch.plan.chunking import Chunk
    from hindsight_batch.plan.planning import _chunk_times

    kinds: list[str | None] = [None, "not a time", "1970-01-01T00:00:00Z", "2026-05-01T10:00:0{}+02:00",
                               "2026-05-01T08:00:0{}Z"]
    for pattern in itertools.product(kinds, repeat=5):
        stamps = [kind.format(i) if kind else kind for i, kind in enumerate(pattern)]
        chunk = Chunk(0, [EntryNode(i, i + 2, f"n{i}", None, "message", s) for i, s in enumerate(stamps)])
        valid = [t for t in (utc_timestamp(s) for s in stamps) if t is not None]
        assert _chunk_times(chunk) == ((valid[0], valid[-1]) if valid else (None, None)), stamps


def greedy(turn_records: list[list[int]], turns_per_chunk: int, limit: int) -> list[list[int]]:
    """The chunker's rule, written out: records joined by one newline byte; a chunk takes whole turns while the
    joined size stays within ``limit`` (an exact fit included), and a turn larger than ``limit`` alone is split
    between records the same way. Returns each chunk's record sizes."""
    chunks: list[list[int]] = []
    current: list[int] = []
    turns = 0

    def joined(sizes: list[int]) -> int:
        return sum(sizes) + max(len(sizes) - 1, 0)

    for turn in turn_records:
        if current and (turns >= turns_per_chunk or joined(current + turn) > limit):
            chunks.append(current)
            current, turns = [], 0
        if joined(turn) <= limit:
            current, turns = current + turn, turns + 1
            continue
        if current:
            chunks.append(current)
        current = []
        for size in turn:
            if current and joined([*current, size]) > limit:
                chunks.append(current)
                current = []
            current.append(size)
        chunks.append(current)
        current, turns = [], 0
    if current:
        chunks.append(current)
    return chunks


def nodes_of(turn_records: list[list[int]]) -> list[EntryNode]:
    out = []
    for turn in turn_records:
        for i, size in enumerate(turn):
            out.append(node(len(out), "user" if i == 0 else "assistant", size))
    return out


@pytest.mark.parametrize(("turn_records", "limit", "expected"), [
    ([[10], [10]], 21, [[10, 10]]),  # 10 + "\n" + 10: an exact fit is one chunk
    ([[10], [10]], 20, [[10], [10]]),  # one byte over: two chunks
    ([[10], [10], [10]], 32, [[10, 10, 10]]),
    ([[10], [10], [10]], 31, [[10, 10], [10]]),  # the joiner of the first two counts when the third comes
    ([[10, 10]], 20, [[10], [10]]),  # a turn of 21 bytes is larger than 20: split between its records
    ([[10, 10, 10]], 21, [[10, 10], [10]]),
    ([[10, 10, 10]], 20, [[10], [10], [10]]),
    ([[10, 10, 10, 10]], 31, [[10, 10], [10, 10]]),  # 32 bytes would be one over
])
def test_the_newline_between_records_counts_against_the_byte_limit(
    turn_records: list[list[int]], limit: int, expected: list[list[int]]
) -> None:
    """A chunk is its records joined by newlines: one byte each, so a chunk is never one byte over the limit
    (dropping that byte let one be) and an exact fit is not split."""
    chunks = chunk_nodes(nodes_of(turn_records), 12, limit)
    sizes = [[_size(n) for n in c.nodes] for c in chunks]
    assert sizes == expected == greedy(turn_records, 12, limit)
    for chunk, records in zip(chunks, sizes, strict=True):
        assert chunk.size == sum(records) + len(records) - 1


def _size(n: EntryNode) -> int:
    assert isinstance(n.payload, EntryOutcome)
    return n.payload.size


@given(st.lists(st.lists(st.integers(1, 60), min_size=1, max_size=4), min_size=1, max_size=12),
       st.integers(1, 5), st.integers(1, 150))
@settings(max_examples=300, deadline=None)
def test_chunks_are_the_greedy_windows_and_never_over_the_limit(
    turn_records: list[list[int]], turns_per_chunk: int, limit: int
) -> None:
    chunks = chunk_nodes(nodes_of(turn_records), turns_per_chunk, limit)
    sizes = [[_size(n) for n in c.nodes] for c in chunks]
    assert sizes == greedy(turn_records, turns_per_chunk, limit)
    for chunk, records in zip(chunks, sizes, strict=True):
        assert chunk.size == sum(records) + len(records) - 1
        assert chunk.size <= limit or len(records) == 1  # only a record larger than the limit stands alone


def test_planned_items_are_never_one_byte_over_max_chunk_bytes(tmp_path: Path) -> None:
    """Through the whole pipeline: the manifest's bytes per chunk, for messages whose sizes sweep past the
    limit one byte at a time, are the greedy windows of the turns' own sizes, none over maxChunkBytes."""
    def session(path: Path, padding: int) -> Path:
        b = SessionBuilder(session_id=f"sweep-{padding}")
        for i in range(6):  # turns of 484 + 17 i bytes; the first two, 986 + padding joined
            b.user(f"question {i} " + "q" * (100 + 17 * i + (padding if i == 0 else 0)))
            b.assistant(f"answer {i} " + "a" * 150)
        return b.write(path)

    for padding in range(0, 40):
        path = session(tmp_path / f"s{padding}.jsonl", padding)
        header = peek_header(path)
        assert not isinstance(header, str)
        one_per_turn = Settings.model_validate({"import": {"turnsPerChunk": 1}})
        turns = chunk_bytes(plan_session(path, header, one_per_turn, Redactor(b"k"), "r", False, StageTimes()))
        limited = Settings.model_validate({"import": {"maxChunkBytes": 1000, "turnsPerChunk": 12}})
        planned = chunk_bytes(plan_session(path, header, limited, Redactor(b"k"), "r", False, StageTimes()))
        expected = [sum(c) + len(c) - 1 for c in greedy([[t] for t in turns], 12, 1000)]
        assert planned == expected and max(planned) <= 1000, (padding, turns)


def chunk_bytes(plan: SessionPlan) -> list[int]:
    """The bytes of each chunk of the main branch, in window order (a chunk has a row per bank it goes to)."""
    by_window = {row.chunk_index: row.bytes for row in plan.rows if row.segment == "main"}
    return [by_window[window] for window in sorted(by_window)]
