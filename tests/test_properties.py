"""Property-based tests (hypothesis, bounded): whatever a session line holds, reading and projecting it neither
raises nor lets a lone surrogate or a memory marker through; whatever a text holds, the fast text helpers of
routing and redaction give what their plain definitions give."""

from __future__ import annotations

import json
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.textscan import lower
from hindsight_batch.config import Settings
from hindsight_batch.redaction.redactor import Redactor
from hindsight_batch.retention.memory_filter import MEMORY_MARKERS, excise_memory
from hindsight_batch.retention.projection import Projector
from hindsight_batch.retention.records import RecordMaker, RecordStore
from hindsight_batch.retention.stagetimes import StageTimes
from hindsight_batch.routing.signals import separated
from hindsight_batch.session.reader import read_session
from hindsight_batch.session.tree import active_path, branch_segments, context_view

BOUNDED = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIELDS = ["type", "id", "parentId", "timestamp", "message", "role", "content", "customType", "toolName",
          "toolCallId", "text", "name", "arguments", "summary", "firstKeptEntryId", "command", "output"]
TEXT = st.lists(st.sampled_from(["a", " ", "<", ">", "\ud800", "\U0001F600", "é", "hindsight_", "memories",
                                 "<hindsight_memories>", "</hindsight_memories>"]), max_size=8).map("".join)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(FIELDS) | TEXT, inner, max_size=4), max_leaves=12)
TYPES = st.sampled_from(["message", "custom_message", "compaction", "branch_summary", "custom", "label"])
ROLES = st.sampled_from(["user", "assistant", "toolResult", "custom", "bashExecution", "hookMessage"])


@st.composite
def entries(draw: st.DrawFn) -> dict[str, Any]:
    """A pi-like entry, with any field possibly replaced by any JSON value."""
    entry: dict[str, Any] = {"type": draw(TYPES), "id": draw(st.sampled_from(["a", "b", "c", "d\udc00"])),
                             "parentId": draw(st.sampled_from([None, "a", "b", "c", "x"])),
                             "timestamp": "2026-05-01T10:00:00.000Z",
                             "message": {"role": draw(ROLES), "content": [{"type": "text", "text": draw(TEXT)}],
                                         "toolName": "bash", "toolCallId": "c1"}}
    for _ in range(draw(st.integers(0, 3))):
        target = entry if draw(st.booleans()) or not isinstance(entry.get("message"), dict) else entry["message"]
        target[draw(st.sampled_from(FIELDS))] = draw(JSON)
    return entry


def line_of(entry: dict[str, Any], damage: int) -> bytes:
    data = json.dumps(entry, separators=(",", ":") if damage % 2 else (", ", ": ")).encode("utf-8", "surrogatepass")
    if damage == 2:
        data = data[: len(data) // 2]  # cut
    elif damage == 3:
        data = data.replace(b"a", b"\xff", 1)  # invalid UTF-8
    elif damage == 4:
        data = data + data  # glued
    elif damage == 5:
        data = b"[" * 1100 + data  # too deep
    return data


def no_surrogate(value: Any) -> bool:
    text = json.dumps(value, ensure_ascii=False)  # a lone surrogate stays one here, and fails the strict encode
    return text.encode("utf-8", "surrogatepass") == text.encode("utf-8", "replace")


@BOUNDED
@given(st.lists(st.tuples(entries(), st.integers(0, 9)), max_size=8), st.sampled_from(["default", "all"]))
def test_reading_and_projecting_any_lines_never_raises(lines: list[tuple[dict[str, Any], int]], shape: str) -> None:
    header = b'{"type":"session","version":3,"id":"prop","cwd":"/p"}'
    data = b"\n".join([header, *(line_of(entry, damage) for entry, damage in lines)]) + b"\n"
    config = Settings() if shape == "default" else Settings.model_validate({
        "retainContent": {"user": ["text", "thinking", "toolCall", "image"], "toolResult": ["text"],
                          "assistant": ["text", "thinking", "toolCall", "image"]},
        "strip": {"topLevel": [], "message": []}, "import": {"retainCustomTypes": ["*"]}})
    store = RecordStore()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        path.write_bytes(data)
        session = read_session(path, RecordMaker(config, Redactor(b"k"), store, StageTimes()))
    assert session.header is not None and len(session.entries) <= 2 * len(lines)
    for node in session.entries:  # ids reach manifests and uploads: strict UTF-8 (no lone surrogate)
        assert isinstance(node.id, str) and (node.parent_id is None or isinstance(node.parent_id, str))
        f"{node.id}{node.parent_id}{node.timestamp}".encode()
    path_nodes = active_path(session.entries)
    context_view(path_nodes)
    branch_segments(session.entries, True)
    kept = [n.payload.handle for n in session.entries if n.payload is not None and n.payload.handle is not None]
    text = store.join(kept).decode("utf-8")  # strict: no lone surrogate was stored
    for record in filter(None, text.split("\n")):
        assert no_surrogate(json.loads(record))
        for opening in MEMORY_MARKERS:
            assert opening not in record


@BOUNDED
@given(entries())
def test_projection_of_any_entry_never_raises_and_serializes(entry: dict[str, Any]) -> None:
    projector = Projector(Settings.model_validate({"retainContent": {"toolResult": ["text"],
                                                                     "assistant": ["text", "toolCall"]}}))
    projection = projector.project(entry)
    if projection.record is not None:
        jsoncodec.dumps(projection.record)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["<", "hindsight_", "memories>", "<hindsight_memories>", "</hindsight_memories>",
                                 "<hindsight-memory>", "</hindsight-memory>", "<mental_models>", "x",
                                 "</mental_models>", "mental_models>", "-memory>"]), max_size=20))
def test_memory_marker_removal_never_leaves_an_opening(pieces: list[str]) -> None:
    text = "".join(pieces)
    out, removed = excise_memory(text)
    assert all(opening not in out for opening in MEMORY_MARKERS)
    assert (removed > 0) == any(opening in text for opening in MEMORY_MARKERS)
    assert len(out) <= len(text)


HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-05-01T10:00:00.000Z", "cwd": "/w/app"}
STARTS = st.sampled_from([
    json.dumps(HEADER).encode(), json.dumps(dict(HEADER, version=1)).encode(), json.dumps(dict(HEADER, id="")).encode(),
    json.dumps(dict(HEADER, cwd="/w/" + "x" * 5000)).encode(),  # a header line longer than the first block
    json.dumps(dict(HEADER, cwd="/w/\ud83d")).encode(),  # a lone surrogate escape: orjson refuses it
    json.dumps(HEADER).encode().replace(b"app", b"a\xffp"),  # invalid UTF-8
    json.dumps(HEADER).encode() * 2,  # glued
    b"\xef\xbb\xbf" + json.dumps(HEADER).encode(),  # a byte-order mark
    b'{"type":"message","id":"a"}', b"[1, 2]", b"not json", b"", b"   ", b"{", b'{"type":"session","id":"s","x":NaN}',
    b"INFO a log line", b"  12", b"\t" + json.dumps(HEADER).encode(), b"\x0b{}", b"1" + json.dumps(HEADER).encode(),
])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(STARTS, st.sampled_from([b"\n", b"\r\n", b""])), min_size=1, max_size=4))
def test_the_header_peek_agrees_with_reading_the_file(lines: list[tuple[bytes, bytes]]) -> None:
    """``peek_header`` reads a whole first line in one parse and skips lines of text unparsed: whatever the file's
    start, it gives the first object of all the file's lines, parsed (what pi takes as the header), and a header
    it finds is the header a full read finds."""
    from hindsight_batch.session.jsonl import Malformed, iter_objects
    from hindsight_batch.session.reader import peek_header, read_header

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        path.write_bytes(b"".join(line + end for line, end in lines))
        peeked = peek_header(path)
        with path.open("rb") as stream:
            first = next((item.obj for item in iter_objects(stream) if not isinstance(item, Malformed)), None)
        assert peeked == ("empty file" if first is None else read_header(first))
        if not isinstance(peeked, str):
            assert read_session(path).header == peeked


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40)
       | st.lists(st.sampled_from(["a", "Z", "9", " ", "\t", "\n", ".", ",", "'", "-", "_", "/", "\x00", "\x7f", "é",
                                   "İ", "中", "\U0001F600", "\ud800", "\udfff", "\x80"]), max_size=20).map("".join))
def test_the_routers_word_separation_equals_a_per_character_translation(text: str) -> None:
    """Routing splits words at ASCII punctuation by translating the text's UTF-8 bytes: for any text, CJK, emoji,
    controls and lone surrogates included, the result is the character-by-character translation it replaced."""
    by_character = text.translate({c: " " for c in range(128) if not (chr(c).isalnum() or chr(c) in "'-_")})
    assert separated(text) == by_character


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "Z", "İ", "I", "ı", "Σ", "ς", " ", "ß", "ẞ", "\u212a", "中", "\ud800",
                                 "\U0001F600"]), max_size=20).map("".join) | st.text(max_size=30))
def test_lowering_for_matching_keeps_every_position(text: str) -> None:
    """Redaction and routing match on a lowercased copy and use its positions in the original: whatever the text
    ("İ" lowercases to two characters, "Σ" to "σ" or "ς" by its place), each character is lowered in place or,
    when its lowercase is longer, kept."""
    lowered = lower(text)
    assert len(lowered) == len(text)
    for original, low in zip(text, lowered, strict=True):
        if len(original.lower()) != 1:
            assert low == original
        else:
            assert low == original.lower() or (original, low) == ("Σ", "ς")


LINE_PIECES = st.sampled_from([b"{", b"}", b"[", b"]", b" ", b"\t", b"\r", b"\x0b", b"\x0c", b"1", b"-", b'"',
                               b'"a"', b":", b",", b"null", b"NaN", b"x", b"\xff", b"\xef\xbb\xbf", b"\\ud800",
                               b'{"type":"custom","id":"g"}', b"[1, 2]"])


@settings(max_examples=400, deadline=None)
@given(st.tuples(st.sampled_from([b"", b" ", b"\t", b" \r\t"]), st.lists(LINE_PIECES, min_size=1, max_size=8))
       .map(lambda t: t[0] + b"".join(t[1])), st.booleans())
def test_a_line_said_to_hold_no_object_parses_to_one_malformed_line(data: bytes, terminated: bool) -> None:
    """The reader counts a line :func:`holds_no_object` picks out without parsing it: whatever the line, parsing
    it gives exactly one malformed line (not a truncated tail) and no object, and the fast path refuses it too."""
    from hindsight_batch.session.jsonl import Malformed, RawLine, holds_no_object, parse_line, parse_object

    if not data.strip():
        return  # a blank line is never a line (iter_lines skips it)
    padded = b"\n" + data + b"\n"  # where the reader sees it: inside its block
    line = RawLine(2, 1, len(data), bytearray(padded), 1, 1 + len(data), terminated)
    if not holds_no_object(line):
        return
    assert parse_object(line) is None
    items = parse_line(BytesIO(padded), line)
    assert len(items) == 1 and isinstance(items[0], Malformed) and not items[0].truncated_tail, items


@settings(max_examples=400, deadline=None)
@given(st.tuples(st.sampled_from([b"", b" ", b"{", b'{"type":"custom","id":"g"}']),
                 st.lists(LINE_PIECES, max_size=8)).map(lambda t: t[0] + b"".join(t[1])), st.booleans())
def test_a_line_the_fast_path_refused_parses_the_same_without_orjson(data: bytes, terminated: bool) -> None:
    """The reader parses a line ``parse_object`` gave None for without trying orjson again: whatever the line
    (cut, glued, invalid UTF-8, a lone surrogate escape, NaN, not an object), that gives what trying it gives."""
    from hindsight_batch.session.jsonl import RawLine, parse_line, parse_object

    if not data.strip():
        return
    padded = b"\n" + data + b"\n"
    line = RawLine(2, 1, len(data), bytearray(padded), 1, 1 + len(data), terminated)
    if parse_object(line) is not None:
        return
    assert parse_line(BytesIO(padded), line, fast_path_tried=True) == parse_line(BytesIO(padded), line)


# -- prune-recall-messages: its index and its rewrite against the reader ---------------------------------------------

LINE_KINDS = ["whole", "whole", "whole", "cut", "cut-unterminated", "glued", "text", "blank", "other-order",
              "invalid-utf8"]


@st.composite
def damaged_sessions(draw: st.DrawFn) -> tuple[bytes, set[str]]:
    """A v3 session of messages written as pi writes them (its key order), some of them recall, with lines cut
    short, glued, of text, blank, not UTF-8 or in another key order among them, an id now and then used twice and
    a parent now and then missing or the entry itself; and the ids of its recall entries (an id two lines share is
    the later one's, as in pi)."""
    lines = [json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "2026-05-01T10:00:00.000Z",
                         "cwd": "/w"}, separators=(",", ":")).encode() + b"\n"]
    ids: list[str] = []
    roles: dict[str, str] = {}
    for n in range(draw(st.integers(1, 9))):
        entry_id = draw(st.sampled_from(ids)) if ids and draw(st.integers(0, 7)) == 0 else f"m{n}"
        role = draw(st.sampled_from(["user", "assistant", "custom"]))
        message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": draw(TEXT)}]}
        if role == "custom":
            message.update(customType="hindsight-recall", content="<hindsight_memories>m</hindsight_memories>")
        parent = draw(st.sampled_from([None, *ids[-3:], *ids[-3:], "nowhere", entry_id]))
        entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-05-01T10:00:00.000Z",
                 "message": message}
        line = json.dumps(entry, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
        kind = draw(st.sampled_from(LINE_KINDS))
        if kind.startswith("cut"):  # pi killed mid-write, or a sync that spliced: it starts as a whole line does
            line = line[: draw(st.integers(len(line) // 3, len(line) - 1))]
        elif kind == "glued":
            line += b'{"type":"custom","id":"g%d","parentId":null}' % n
        elif kind == "text":
            line = b"INFO served " + entry_id.encode()
        elif kind == "blank":
            line = b"  "
        elif kind == "other-order":
            line = json.dumps(dict(reversed(entry.items())), separators=(",", ":")).encode("utf-8", "surrogatepass")
        elif kind == "invalid-utf8":  # still an entry: pi reads the byte as U+FFFD
            line = line.replace(b'"timestamp":"', b'"timestamp":"\xff', 1)
        if kind in ("whole", "other-order", "invalid-utf8"):
            ids.append(entry_id)
            roles[entry_id] = role
        lines.append(line + (b"" if kind == "cut-unterminated" else b"\n"))
        if kind == "cut-unterminated":
            break  # only the last line can be unterminated
    return b"".join(lines), {i for i, role in roles.items() if role == "custom"}


@settings(max_examples=300, deadline=None)
@given(damaged_sessions())
def test_prunes_index_finds_the_entries_the_reader_finds(session: tuple[bytes, set[str]]) -> None:
    """``prune-recall-messages`` reads most lines from their first bytes alone: whatever the damage, the entries it
    finds (but for the objects of glued lines, which pi drops and it leaves alone) are the reader's, which are
    pi's: a line cut short that starts as a whole one does is no entry."""
    from hindsight_batch.prune.index import index_file

    data, _recall = session
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        path.write_bytes(data)
        version, found, problem = index_file(path, ("hindsight-recall",))
        session_file = read_session(path)
    assert (version, problem) == (3, None)
    glued = set(session_file.glued_lines)
    assert [(e.lineno, e.id, e.parent) for e in found if not e.glued] == [
        (e.lineno, e.id, e.parent_id) for e in session_file.entries if e.lineno not in glued]


@settings(max_examples=150, deadline=None)
@given(damaged_sessions())
def test_pruning_leaves_pis_active_path_minus_the_recall(session: tuple[bytes, set[str]]) -> None:
    """After ``prune-recall-messages --confirm``, whatever the damage, pi's active path (the reader's, with glued
    lines dropped as pi drops them) is the one before without the recall entries, and no recall entry is left (one
    that was the leaf may stay neutralised: same id, no recall). A glued line is neither changed nor in the way."""
    from hindsight_batch.prune import prune_file
    from hindsight_batch.prune.index import index_file

    def pis_path(path: Path) -> list[str]:
        """The reader's active path of the file as pi reads it: a glued line dropped (the reader recovers its
        objects, a documented difference)."""
        glued = set(read_session(path).glued_lines)
        view = path.with_name("as-pi-reads-it.jsonl")
        view.write_bytes(b"\n".join(b"" if n in glued else line
                                    for n, line in enumerate(path.read_bytes().split(b"\n"), 1)))
        return [e.id for e in active_path(read_session(view).entries)]

    data, recall = session
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        path.write_bytes(data)
        before = pis_path(path)
        result = prune_file(path, confirm=True, force=True)
        after = pis_path(path)
        left = {e.id for e in index_file(path, ("hindsight-recall",))[1] if e.recall and not e.glued}
    assert result.status in ("pruned", "clean"), result.reason
    assert not left
    assert after == [i for i in before if i not in recall or i in result.plan["neutralise"]]
