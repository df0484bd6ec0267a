"""Turns, chunk limits, and windows that stay stable as a session grows (S4)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hindsight_batch.chunking import chunk_nodes
from hindsight_batch.config import Settings
from hindsight_batch.planning import plan_session
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
    b.user("hello")
    b.assistant("world")
    path = b.write(tmp_path / "s.jsonl")
    assert plan(path) == plan(path)
    assert plan(path)[0][0] == "pi-import:abc:project:main:w0000"


def test_a_chunks_times_are_its_first_and_last_valid_timestamps_whatever_lies_between() -> None:
    """started_at/ended_at of a manifest row: every mix of missing, unreadable, pre-1971 and valid timestamps over
    five entries gives what converting every entry gives (planning reads each end only up to its first stamp)."""
    import itertools

    from hindsight_batch.chunking import Chunk
    from hindsight_batch.planning import _chunk_times
    from hindsight_batch.timestamps import utc_timestamp

    kinds: list[str | None] = [None, "not a time", "1970-01-01T00:00:00Z", "2026-05-01T10:00:0{}+02:00",
                               "2026-05-01T08:00:0{}Z"]
    for pattern in itertools.product(kinds, repeat=5):
        stamps = [kind.format(i) if kind else kind for i, kind in enumerate(pattern)]
        chunk = Chunk(0, [EntryNode(i, i + 2, f"n{i}", None, "message", s) for i, s in enumerate(stamps)])
        valid = [t for t in (utc_timestamp(s) for s in stamps) if t is not None]
        assert _chunk_times(chunk) == ((valid[0], valid[-1]) if valid else (None, None)), stamps
