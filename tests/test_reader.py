"""Reading sessions: headers, versions and migration, linearization, compaction, branches, real files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hindsight_batch import build
from hindsight_batch.config import Settings
from hindsight_batch.redaction.redactor import Redactor
from hindsight_batch.retention.records import EntryOutcome, RecordMaker, RecordStore
from hindsight_batch.retention.stagetimes import StageTimes
from hindsight_batch.session.discovery import default_session_root, find_session_files
from hindsight_batch.session.model import KEPT_LINE_PROBLEMS
from hindsight_batch.session.reader import EntryCallback, peek_header, read_session
from hindsight_batch.session.tree import active_path, branch_segments, context_view
from tests.conftest import REAL_SAMPLES, SAMPLES, SessionBuilder


def ids(nodes: list) -> list[str]:  # type: ignore[type-arg]
    return [n.id for n in nodes]


def test_header_fields_and_parent_session(tmp_path: Path) -> None:
    b = SessionBuilder(cwd="/src/app")
    b.lines[0] = b.lines[0][:-1] + ', "parentSession": "/x/2026-01-01T00-00-00-000Z_parent-uuid.jsonl"}'
    b.user("hi")
    session = read_session(b.write(tmp_path / "s.jsonl"))
    assert session.header is not None
    assert (session.header.id, session.header.cwd, session.header.version) == ("sess-1", "/src/app", 3)
    assert session.header.parent_session_id == "parent-uuid"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("", "empty file"),
        ('{"type":"message","id":"a"}\n', "not a Pi session header"),
        ('{"type":"session","version":4,"id":"x","cwd":"/"}\n', "unsupported session version 4"),
    ],
)
def test_files_that_are_not_sessions_say_why(tmp_path: Path, body: str, problem: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(body)
    session = read_session(path)
    assert session.header is None and session.problem is not None and problem in session.problem


@pytest.mark.parametrize(
    ("value", "version"),
    [('"3"', 3), ("3.0", 3), ('"3.0"', 3), ('" 3 "', 3), ('"2"', 2), ("2.0", 2), ('"1"', 1), ("null", 1),
     ("true", 1), ('"0x3"', 3), ('"3e0"', 3)],
)
def test_a_header_version_pi_reads_as_a_number_is_that_version(tmp_path: Path, value: str, version: int) -> None:
    """pi compares ``header.version ?? 1`` as a JavaScript number (tests/pi: "3" and 3.0 load as version 3, "2"
    is migrated from 2, null as 1): the same file is that version here too, migrated the same way."""
    path = tmp_path / "s.jsonl"
    path.write_text(f'{{"type":"session","version":{value},"id":"x","cwd":"/w"}}\n'
                    '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-05-01T10:00:01.000Z",'
                    '"message":{"role":"hookMessage","customType":"c","content":"hi","display":true}}\n')
    session = read_session(path)
    assert session.problem is None and session.header is not None and session.header.version == version
    assert [n.id for n in session.entries] == (["L2"] if version == 1 else ["a1"])
    peeked = peek_header(path)
    assert not isinstance(peeked, str) and peeked.version == version


@pytest.mark.parametrize("value", ["4", '"4"', "2.5", '"x"', '""', "[3]", "{}", "0", "-1", "1e400"])
def test_a_header_version_that_is_not_1_2_or_3_to_pi_is_refused(tmp_path: Path, value: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(f'{{"type":"session","version":{value},"id":"x","cwd":"/w"}}\n')
    session = read_session(path)
    assert session.header is None and "unsupported session version" in (session.problem or "")


def test_a_cwd_longer_than_any_path_fails_its_session_with_a_clear_reason(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"type":"session","version":3,"id":"x","cwd":"' + "/a" * 40_000 + '"}\n')
    session = read_session(path)
    assert session.header is None
    assert "cwd is 80,000 characters long, longer than any folder pi can run in" in (session.problem or "")


def test_header_only_file_has_no_entries() -> None:
    session = read_session(REAL_SAMPLES / "pi-v3-header-only.jsonl")
    assert session.header is not None and session.entries == [] and session.problem is None


def test_repeated_header_mid_file_is_ignored(tmp_path: Path) -> None:
    b = SessionBuilder()
    b.user("one")
    b.raw(b.lines[0])
    b.user("two")
    session = read_session(b.write(tmp_path / "s.jsonl"))
    assert [n.type for n in session.entries] == ["message", "message"]


def test_v1_entries_get_line_number_ids_chained_in_file_order() -> None:
    path = SAMPLES / "--home-dev-acme-web--" / "2026-05-01T10-00-00-000Z_11111111-2222-4333-8444-555555555555.jsonl"
    session = read_session(path)
    assert session.header is not None and session.header.version == 1
    assert ids(session.entries) == ["L2", "L3", "L4", "L5", "L6", "L6.1", "L7", "L8", "L9", "L10", "L11"]
    assert [n.parent_id for n in session.entries[:3]] == [None, "L2", "L3"]
    assert session.glued_lines == [6]
    compaction = next(n for n in session.entries if n.type == "compaction")
    # firstKeptEntryIndex 4 counts the header as 0: the fourth entry, the "Add a lint step" message on line 5.
    assert compaction.first_kept_id == "L5"
    # Reading twice gives the same ids (S4 depends on it).
    assert ids(read_session(path).entries) == ids(session.entries)


def test_v2_hook_message_role_is_migrated_to_custom() -> None:
    path = SAMPLES / "--home-dev-acme-api--" / "2026-05-01T10-00-00-000Z_22222222-3333-4444-8555-666666666666.jsonl"
    roles: list[str] = []

    def visit(entry: dict, node: object) -> None:  # type: ignore[type-arg]
        roles.append(entry["message"]["role"])

    session = read_session(path, EntryCallback(visit))
    assert session.header is not None and session.header.version == 2
    assert roles == ["user", "custom", "assistant", "user", "assistant"]


def test_linearization_walks_all_entry_types_from_the_last_entry(tmp_path: Path) -> None:
    b = SessionBuilder()
    b.entry("model_change", False, provider="p", modelId="m")
    root_user = b.user("first")
    b.assistant("answer A")
    b.entry("label", targetId=root_user, label="x")
    b.user("branch one")  # e5
    b.user("branch two", parent=root_user)  # e6: a sibling of e3, now the leaf
    b.entry("custom", customType="state", data={})
    session = read_session(b.write(tmp_path / "s.jsonl"))
    assert ids(active_path(session.entries)) == ["e1", "e2", "e6", "e7"]


def test_missing_parent_ends_the_path_and_a_cycle_stops(tmp_path: Path) -> None:
    b = SessionBuilder()
    b.user("orphan root", parent="not-here", entry_id="a")
    b.user("child", entry_id="b")
    assert ids(active_path(read_session(b.write(tmp_path / "s.jsonl")).entries)) == ["a", "b"]
    c = SessionBuilder()
    c.user("x", parent="y", entry_id="x")
    c.user("y", parent="x", entry_id="y")
    assert ids(active_path(read_session(c.write(tmp_path / "c.jsonl")).entries)) == ["x", "y"]


def test_context_view_honours_the_last_compaction(tmp_path: Path) -> None:
    b = SessionBuilder()
    b.user("u1")
    b.assistant("a1")
    kept = b.user("u2")
    b.assistant("a2")
    b.entry("compaction", summary="s1", firstKeptEntryId="e1", tokensBefore=1)
    b.user("u3")
    b.entry("compaction", summary="s2", firstKeptEntryId=kept, tokensBefore=2)
    b.user("u4")
    view = context_view(active_path(read_session(b.write(tmp_path / "s.jsonl")).entries))
    assert view.compaction is not None and view.compaction.id == "e7"
    assert ids(view.entries) == ["e3", "e4", "e5", "e6", "e8"]


def test_compaction_whose_kept_entry_is_off_path_keeps_nothing_before_it(tmp_path: Path) -> None:
    b = SessionBuilder()
    b.user("u1")
    b.entry("compaction", summary="s", firstKeptEntryId="elsewhere", tokensBefore=1)
    b.user("u2")
    view = context_view(active_path(read_session(b.write(tmp_path / "s.jsonl")).entries))
    assert ids(view.entries) == ["e3"]


def test_all_branches_never_share_a_prefix(tmp_path: Path) -> None:
    b = SessionBuilder()
    b.user("u1")
    fork = b.assistant("a1")
    b.user("side question")  # e3
    b.assistant("side answer")  # e4
    b.user("main continues", parent=fork)  # e5
    b.assistant("main answer")  # e6
    session = read_session(b.write(tmp_path / "s.jsonl"))
    segments = branch_segments(session.entries, all_branches=True)
    assert [(s.key, ids(s.entries)) for s in segments] == [
        ("main", ["e1", "e2", "e5", "e6"]),
        ("fork-e3", ["e3", "e4"]),
    ]
    assert [s.key for s in branch_segments(session.entries, all_branches=False)] == ["main"]


def test_discovery_default_root_and_overrides(tmp_path: Path) -> None:
    assert default_session_root({"HOME": "/h"}).name == "sessions"
    assert default_session_root({"PI_CODING_AGENT_DIR": str(tmp_path)}) == tmp_path / "sessions"
    assert default_session_root({"PI_CODING_AGENT_SESSION_DIR": str(tmp_path / "flat")}) == tmp_path / "flat"
    root = tmp_path / "sessions"
    (root / "--a--" / "artifacts").mkdir(parents=True)
    (root / "--a--" / "1.jsonl").write_text("{}")
    (root / "--a--" / "artifacts" / "deep.jsonl").write_text("{}")
    (root / "--a--" / "notes.txt").write_text("x")
    assert find_session_files([], {"PI_CODING_AGENT_DIR": str(tmp_path)}) == [root / "--a--" / "1.jsonl"]


# Hand-checked against an independent line-by-line count (json.loads and raw_decode per line): entries are
# the non-header objects, glued lines are the ones SOURCES.md names, and "kept" counts user and assistant
# messages with non-blank text (the default retainContent; the files have no other kept content).
REAL_EXPECTED = {
    "pi-v1-before-compaction.first715lines.jsonl": (714, [], [], 220),
    "pi-v1-compact-images-corruptline.jsonl": (1013, [], [1013], 280),
    "pi-v1-large-session.jsonl": (1018, [], [], 332),
    "pi-v1-oldheader-corruptline.jsonl": (463, [], [440], 120),
    "pi-v3-header-only.jsonl": (0, [], [], 0),
    "pi-v3-kimchi-custom-entries.jsonl": (147, [], [], 23),
}


@pytest.mark.parametrize("name", sorted(REAL_EXPECTED))
def test_every_real_sample_reads_with_the_hand_checked_counts(name: str) -> None:
    entries, malformed, glued, kept = REAL_EXPECTED[name]
    store = RecordStore()
    session = read_session(REAL_SAMPLES / name, RecordMaker(Settings(), Redactor(b"k"), store, StageTimes()))
    assert len(session.entries) == entries
    assert [p.lineno for p in session.malformed] == malformed
    assert session.glued_lines == glued
    path = active_path(session.entries)
    assert len(path) == entries  # these files are linear: the active path holds every entry
    kept_count = sum(1 for n in path if isinstance(n.payload, EntryOutcome) and n.payload.handle is not None)
    assert kept_count == kept


def test_every_real_sample_file_is_covered() -> None:
    assert sorted(p.name for p in REAL_SAMPLES.glob("*.jsonl")) == sorted(REAL_EXPECTED)


@pytest.mark.parametrize("block", [None, 64, 7])
def test_tool_result_lines_are_indexed_unparsed_only_when_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int | None
) -> None:
    """Tool output is most of a session's bytes; when no setting could keep it, its line is indexed from pi's
    key-order prefix without parsing. A glued or cut line still goes through the parser. Lines that run across
    read blocks (small blocks here) give the same result."""
    if block is not None:
        monkeypatch.setattr("hindsight_batch.session.reader.BLOCK_BYTES", block)
    b = SessionBuilder()
    b.user("run it")
    b.assistant({"type": "toolCall", "id": "h1", "name": "hindsight_recall", "arguments": {}},
                {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}})
    b.lines.append('{"type":"message","id":"r1","parentId":"e2","timestamp":"2026-05-01T10:00:03.000Z","message":'
                   '{"role":"toolResult","toolCallId":"h1","toolName":"recall_alias","content":[{"type":"text",'
                   '"text":"MEMORY"}],"isError":false,"timestamp":1}}')
    b.lines.append('{"type":"message","id":"r2","parentId":"r1","timestamp":"2026-05-01T10:00:04.000Z","message":'
                   '{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text",'
                   '"text":"out"}],"isError":false,"timestamp":1}}'
                   '{"type":"message","id":"u9","parentId":"r2","timestamp":"2026-05-01T10:00:05.000Z","message":'
                   '{"role":"user","content":"glued question","timestamp":1}}')
    path = b.write(tmp_path / "s.jsonl")
    store = RecordStore()
    session = read_session(path, RecordMaker(Settings(), Redactor(b"k"), store, StageTimes()))
    outcomes = {n.id: n.payload for n in session.entries}
    assert outcomes["r1"].dropped == "hindsight-tool"  # known by its call id, without parsing
    assert outcomes["r2"].dropped == "retain-content"
    assert "u9" in outcomes and outcomes["u9"].handle is not None  # the glued object was not lost
    assert [n.id for n in active_path(session.entries)] == ["e1", "e2", "r1", "r2", "u9"]


def test_the_record_store_spills_past_its_budget_and_gives_records_back_joined() -> None:
    store = RecordStore(memory_budget=10)
    records = [b'{"a":1}', b'{"bb":"' + b"x" * 20 + b'"}', b"", b'{"c":3}']
    handles = [store.put(r) for r in records]
    assert handles[0] >= 0 and handles[1] < 0  # the second record no longer fits in memory
    assert store.join(handles) == b"\n".join(records)
    assert store.join([handles[3], handles[0]]) == b'{"c":3}\n{"a":1}'
    store.close()


def test_the_reader_tells_how_far_a_large_file_has_been_read(tmp_path: Path) -> None:
    """The progress bar moves within a large file (every few MB), not only when the file is done."""
    b = SessionBuilder()
    for index in range(12):
        b.user(f"step {index}")
        b.tool_result("bash", "x" * 1_000_000)
    path = b.write(tmp_path / "big.jsonl")
    heard: list[int] = []
    maker = RecordMaker(Settings(), Redactor(b"k"), RecordStore(), StageTimes())
    read_session(path, maker, heard.append)
    size = path.stat().st_size
    assert len(heard) >= 2, heard
    assert heard == sorted(heard) and 0 < heard[0] < heard[-1] < size


def test_an_entrys_index_row_stays_small(tmp_path: Path) -> None:
    """What a session costs in memory grows with its entries (the reader keeps an index row for each, until the
    file is planned): a session of 20,000 two-word messages. The entry type and role strings are shared, an entry
    that had nothing removed has no dict of its own, and an entry's parent id is the string of the entry before
    it when it names that entry: 654 bytes an entry before, 427 after (pure Python)."""
    import gc
    import tracemalloc

    b = SessionBuilder(session_id="many")
    for _ in range(10_000):
        b.user("ok")
        b.assistant("done")
    path = b.write(tmp_path / "many.jsonl")
    gc.collect()
    tracemalloc.start()
    try:
        session = read_session(path, RecordMaker(Settings(), Redactor(), RecordStore(), StageTimes()))
        per_entry = tracemalloc.get_traced_memory()[0] / len(session.entries)
    finally:
        tracemalloc.stop()
    assert len(session.entries) == 20_000 and per_entry < 460, per_entry


def damaged(tmp_path: Path, bad_lines: list[str], name: str = "damaged.jsonl") -> Path:
    """A session whose first message is followed by ``bad_lines``, then a last message."""
    b = SessionBuilder()
    b.user("before the damage")
    for line in bad_lines:
        b.raw(line)
    b.user("after the damage")
    return b.write(tmp_path / name)


def test_a_file_of_malformed_lines_is_counted_whole_and_shows_its_first_ones(tmp_path: Path) -> None:
    """Every malformed line is counted and reading goes on past them; the first KEPT_LINE_PROBLEMS are kept,
    in order, with the reason parsing gave (log text, a number, a cut object, NaN), the rest only counted."""
    kinds = ["INFO 2026-05-01 10:00:00 a log line", "12345", '{"type":"message","id":"x","message":{"role"',
             '{"type":"message","id":"y","x":NaN}', "\tnot json either"]
    bad = [kinds[i % len(kinds)] for i in range(5 * KEPT_LINE_PROBLEMS + 3)]
    session = read_session(damaged(tmp_path, bad))
    assert session.malformed_total == len(bad)
    assert [p.lineno for p in session.malformed] == list(range(3, 3 + KEPT_LINE_PROBLEMS))
    reasons = [p.reason for p in session.malformed[: len(kinds)]]
    assert reasons[0].startswith("invalid JSON at column 1") and reasons[1] == "not a JSON object"
    assert reasons[2].startswith("invalid JSON at column") and reasons[3].startswith("invalid JSON at column")
    assert [n.type for n in session.entries] == ["message", "message"]  # the last message is read past them all


def test_a_damaged_file_costs_no_memory_per_malformed_line(tmp_path: Path) -> None:
    """A file of 100,000 damaged lines (text, as in a log saved as .jsonl; objects cut short, as in a damaged
    copy): what reading it holds at its peak (tracemalloc) stays within the file's own size plus a little,
    whatever the count. One problem kept for each line was about 150 bytes a line (7 MB more here)."""
    import gc
    import tracemalloc

    path = damaged(tmp_path, [f"2026-05-01 10:00:{i % 60:02d} INFO request {i} served" if i % 2 else
                              f'{{"type":"message","id":"m{i}","message":{{"role":"user","content":"cut' for i in
                              range(100_000)])
    size = path.stat().st_size
    gc.collect()
    tracemalloc.start()
    try:
        session = read_session(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert session.malformed_total == 100_000 and len(session.entries) == 2
    assert peak < size + (1 << 20), (peak, size)


def test_the_header_is_found_past_lines_of_text(tmp_path: Path) -> None:
    """pi skips lines it cannot parse and takes the first object as the header: so do the reader and the peek,
    past any number of lines of text; a file of text alone has no header."""
    header = SessionBuilder().lines[0]
    text = [f"line {i} of a log" for i in range(5_000)]
    path = tmp_path / "late.jsonl"
    path.write_text("\n".join([*text, "[1, 2]", "  7", header, '{"type":"message","id":"a"}']) + "\n")
    peeked = peek_header(path)
    assert not isinstance(peeked, str) and peeked.id == "sess-1"
    assert read_session(path).header == peeked and read_session(path).malformed_total == len(text) + 2
    only_text = tmp_path / "log.jsonl"
    only_text.write_text("\n".join(text) + "\n")
    assert peek_header(only_text) == "empty file"
    assert read_session(only_text).problem == "no readable session header"


@pytest.mark.skipif(build() == "mypyc", reason="the compiled reader calls the parser natively (not patched): the "
                    "pure pass of scripts/test.sh counts the calls")
def test_text_lines_past_the_first_shown_are_counted_without_being_parsed(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A line whose first character is not "{" holds no JSON object: once the first KEPT_LINE_PROBLEMS problems
    are kept, such a line is counted without being parsed (a 45 MB log took 30 s to be parsed line by line).
    A cut object is still parsed: it may hold glued objects to recover."""
    from hindsight_batch.session import jsonl

    parsed: list[int] = []
    real = jsonl._parse_text

    def counting(line: jsonl.RawLine, data: bytes | bytearray) -> Any:
        parsed.append(line.lineno)
        return real(line, data)

    monkeypatch.setattr(jsonl, "_parse_text", counting)
    text = [f"INFO request {i}" for i in range(1_000)]
    session = read_session(damaged(tmp_path, [*text, '{"cut', '{"type":"custom","id":"g"}{"type":"custom","id":"h"}']))
    assert session.malformed_total == 1_001 and len(parsed) == KEPT_LINE_PROBLEMS + 2
    assert [n.id for n in session.entries if n.type == "custom"] == ["g", "h"]
