"""Indexing a session file for pruning: one :class:`Entry` per object (its place, ids and references) and which of
them are recall, from one read-only pass that parses in full only the lines that need it."""

from __future__ import annotations

import mmap
import os
import re
from pathlib import Path
from typing import Any, NamedTuple

from hindsight_batch.base.fsutil import open_regular_file
from hindsight_batch.session.jsonl import (
    BIG_LINE_BYTES,
    Malformed,
    RawLine,
    holds_no_object,
    parse_line,
    parse_object,
)
from hindsight_batch.session.model import JS_SPACE, session_version

# Every recall shape the two live extensions persist, and nothing else:
# * hindsight-pi's recall message, customType ``hindsight-recall`` (extensions/recall-message.ts
#   ``createRecallCustomMessage``; its own extensions/prune.ts ``pruneRecallMessagesInSessionFile`` removes
#   ``custom_message``/``custom`` entries of that type), and the recall indicator its earlier versions persisted when
#   ``indicatorsInContext`` was set, ``pi.sendMessage({customType: "hindsight-recall-status", content, display,
#   details})`` with the recalled previews in ``details`` (extensions/index.ts ``emitIndicator`` before 538c735;
#   extensions/provider-filter.ts ``HINDSIGHT_RECALL_STATUS_TYPE``). Its retain indicator is not recall: kept.
# * pi-hindsight's recall block: see :func:`is_luxus_recall`.
DEFAULT_TYPES = ("hindsight-recall", "hindsight-recall-status")
LUXUS_RECALL_START = "<hindsight-memory>"
# pi writes message entries as {"type":"message","id":…,"parentId":…,…}: when a line starts so, these are the
# top-level fields, and _FAST reads a plain message line's entry from that prefix (ids with no escapes).
_FAST = re.compile(rb'\{"type":"message","id":"([^"\\]*+)","parentId":(?:null|"([^"\\]*+)")[,}]')


class Entry(NamedTuple):
    """One object of the file (a tuple: a 500 MB session has a hundred thousand of them)."""

    seq: int
    lineno: int
    offset: int
    length: int
    terminated: bool
    glued: bool
    id: str | None
    parent: str | None
    type: str
    recall: bool
    first_kept: str | None = None
    first_kept_index: int | None = None
    target_id: str | None = None
    from_id: str | None = None



def is_luxus_recall(obj: dict[str, Any]) -> bool:
    """pi-hindsight's persisted recall block, as its ``/hindsight:recall-cleanup`` finds it
    (extensions/lifecycle/recall-cleanup.ts ``lineContainsRecallBlock``): ``message?.content ?? entry.content`` is a
    string whose trimmed text starts with ``<hindsight-memory>`` (a mention further in is not one; array content is
    not looked at)."""
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if content is None:
        content = obj.get("content")
    return isinstance(content, str) and content.lstrip(JS_SPACE).startswith(LUXUS_RECALL_START)


def is_recall(obj: dict[str, Any], types: tuple[str, ...]) -> bool:
    if obj.get("type") == "session":
        return False
    if is_luxus_recall(obj):
        return True
    if obj.get("type") == "custom_message":
        return obj.get("customType") in types
    message = obj.get("message")
    return (
        obj.get("type") == "message"
        and isinstance(message, dict)
        and message.get("role") in ("custom", "hookMessage")
        and message.get("customType") in types
    )



def _marker_positions(view: mmap.mmap, markers: tuple[bytes, ...]) -> list[int]:
    """Every offset where a marker occurs: a C-speed search over the whole file, not a test per line."""
    found: list[int] = []
    for marker in markers:
        pos = view.find(marker)
        while pos != -1:
            found.append(pos)
            pos = view.find(marker, pos + 1)
    return sorted(found)


def index_file(path: Path, types: tuple[str, ...]) -> tuple[int, list[Entry], str | None]:
    """Read ``path`` once: its version and an :class:`Entry` per object after the header.

    Lines that start in pi's own key order and hold no recall marker (nearly all of them) are indexed from that
    prefix, once orjson has read the line as one object; a line that holds no JSON object (``holds_no_object``) is
    skipped unparsed; every other line is parsed in full."""
    entries: list[Entry] = []
    version = 0
    with open_regular_file(path) as stream:
        if os.fstat(stream.fileno()).st_size == 0:
            return 0, [], "empty file"
        with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as view:
            markers = _marker_positions(view, (*(t.encode() for t in types), LUXUS_RECALL_START.encode()))
            next_marker = 0
            size = len(view)
            offset = 0
            lineno = 0
            match = _FAST.match
            find = view.find
            while offset < size:  # one line per turn
                end = find(b"\n", offset)
                terminated = end != -1
                if not terminated:
                    end = size
                lineno += 1
                length = end - offset
                if length == 0:
                    offset = end + 1
                    continue
                while next_marker < len(markers) and markers[next_marker] < offset:
                    next_marker += 1
                has_marker = next_marker < len(markers) and markers[next_marker] < end
                if view[offset] in b" \t\r" and not view[offset:end].strip():
                    offset = end + 1
                    continue
                data = view[offset : offset + length] if length <= BIG_LINE_BYTES else None
                line = RawLine(lineno, offset, length, data, 0, length, terminated)
                fast = match(data) if version and not has_marker and data is not None else None
                # The prefix alone says what the entry is, but not that the line is one: a line cut short (pi killed
                # mid-write) or glued to another starts the same way, and pi drops it.
                if fast is not None and parse_object(line) is not None:
                    raw_id, raw_parent = fast.group(1, 2)
                    entries.append(Entry(
                        len(entries), lineno, offset, length, terminated, False, raw_id.decode(),
                        None if raw_parent is None else raw_parent.decode(), "message", False,
                    ))
                    offset = end + 1
                    continue
                if holds_no_object(line):  # malformed, copied as it is: nothing to index (a log may be nothing else)
                    offset = end + 1
                    continue
                objects = [o for o in parse_line(stream, line, fast_path_tried=fast is not None)
                           if not isinstance(o, Malformed)]
                for parsed in objects:
                    obj = parsed.obj
                    if not version:
                        if obj.get("type") != "session" or not isinstance(obj.get("id"), str):
                            return 0, [], "not a Pi session (no header on its first object)"
                        known = session_version(obj.get("version"))
                        if known is None:
                            return 0, [], f"unsupported session version {obj.get('version')!r}"[:200]
                        version = known
                        continue
                    if obj.get("type") == "session":
                        continue
                    # The reader's rule for a line pi drops whole (JSON.parse refuses it): more than one value, or an
                    # object followed by anything else ("}", "]", text). Such a line is never changed.
                    entries.append(entry_of(obj, line, len(entries), parsed.glued, types))
                offset = end + 1
    if not version:
        return 0, [], "no readable session header"
    return version, entries, None


def entry_of(obj: dict[str, Any], line: RawLine, seq: int, glued: bool, types: tuple[str, ...]) -> Entry:
    def text(key: str) -> str | None:
        value = obj.get(key)
        return value if isinstance(value, str) else None

    index = obj.get("firstKeptEntryIndex")
    return Entry(
        seq, line.lineno, line.offset, line.length, line.terminated, glued, text("id"), text("parentId"),
        str(obj.get("type")), is_recall(obj, types), text("firstKeptEntryId"),
        index if isinstance(index, int) else None, text("targetId"), text("fromId"),
    )


def path_to(leaf: Entry, by_id: dict[str, Entry]) -> list[Entry]:
    """Root-to-leaf over parentId; a missing parent ends it, and a cycle is cut where an entry would repeat."""
    path: list[Entry] = []
    get = by_id.get
    node: Entry | None = leaf
    while node is not None and len(path) <= len(by_id):
        path.append(node)
        node = get(node.parent) if node.parent is not None else None
    if node is not None:  # longer than the file: a cycle; walk again with a guard
        path, seen = [], set()
        node = leaf
        while node is not None and node.seq not in seen:
            seen.add(node.seq)
            path.append(node)
            node = get(node.parent) if node.parent is not None else None
    path.reverse()
    return path

