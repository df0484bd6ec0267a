"""Read one Pi session file into a :class:`SessionFile`: header, entry index, problems.

The reader makes one streaming pass. Each entry (already migrated to the v3 shape) is handed to an optional
visitor (:class:`hindsight_batch.interfaces.EntryVisitor`) whose return value is stored on the entry's index row;
the entry itself is then dropped. That keeps memory bounded by the index and by what the visitor keeps, not by the
file's size. A plain ``visit(entry, node)`` function is a visitor through :class:`EntryCallback`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from hindsight_batch.session.jsonl import (
    BLOCK_BYTES,
    Malformed,
    RawLine,
    is_dense,
    iter_lines,
    iter_objects,
    parse_line,
)
from hindsight_batch.session.migrate import Migrator
from hindsight_batch.session.model import EntryNode, LineProblem, SessionFile, SessionHeader

if TYPE_CHECKING:
    from hindsight_batch.interfaces import EntryVisitor



class EntryCallback:
    """A plain ``visit(entry, node)`` function as an :class:`~hindsight_batch.interfaces.EntryVisitor`: every
    entry is parsed, nothing is finished."""

    def __init__(self, visit: Callable[[dict[str, Any], EntryNode], object]) -> None:
        self._visit = visit

    def __call__(self, entry: dict[str, Any], node: EntryNode) -> object:
        return self._visit(entry, node)

    def unparsed_tool_result(self, tool_name: str, call_id: str) -> object:
        return None

    def finish(self) -> None:
        return None

SUPPORTED_VERSIONS = (1, 2, 3)


def read_header(obj: dict[str, Any]) -> SessionHeader | str:
    """Return the header, or the reason the object is not a usable session header."""
    if obj.get("type") != "session" or not isinstance(obj.get("id"), str) or not obj["id"]:
        return "first JSON object is not a Pi session header"
    raw_version = obj.get("version", 1)
    if type(raw_version) is not int or raw_version not in SUPPORTED_VERSIONS:  # (not True, not 2.0)
        shown = repr(raw_version)[:40] if isinstance(raw_version, (int, float, str)) else type(raw_version).__name__
        return f"unsupported session version {shown} (this tool reads versions 1, 2 and 3)"
    parent = obj.get("parentSession") or obj.get("branchedFrom")
    if isinstance(parent, dict):  # some tools write {id, file}
        parent = parent.get("file") or parent.get("id")
    cwd = obj.get("cwd")
    timestamp = obj.get("timestamp")
    return SessionHeader(
        id=obj["id"],
        version=raw_version,
        timestamp=timestamp if isinstance(timestamp, str) else None,
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        parent_session=parent if isinstance(parent, str) else None,
    )


_TOOL_RESULT_MARK = re.compile(rb'"role"[ \t\r]*+:[ \t\r]*+"toolResult"')  # compact or spaced JSON
_PREFIX_BYTES = 512  # ids and timestamp come first and are short


def _unparsed_tool_result(line: RawLine, seq: int, shortcut: Callable[[str, str], Any]) -> EntryNode | None:
    """Index a tool-result line without projecting it, when the visitor says its content cannot matter.

    The line is still parsed (orjson, ~2 GB/s on such lines, objects dropped at once): a line pi cannot parse
    breaks the chain for pi, so it must for us too, whatever the settings say about its content. Anything orjson
    refuses (invalid UTF-8, a lone surrogate, glued objects, damage) is left to the full path, which decides."""
    data, start, end = line.buffer, line.start, line.end
    if data is None or not line.terminated:
        return None
    if _TOOL_RESULT_MARK.search(data, start, min(end, start + _PREFIX_BYTES)) is None:
        return None  # first: every other kind of line fails here
    raw = line.data
    if raw is None or is_dense(raw):
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or obj.get("type") != "message":
        return None
    message = obj.get("message")
    if not isinstance(message, dict) or message.get("role") != "toolResult":
        return None
    name, call_id = message.get("toolName"), message.get("toolCallId")
    outcome = shortcut(name if isinstance(name, str) else "", call_id if isinstance(call_id, str) else "")
    if outcome is None:
        return None
    node = _index_row(obj, seq, line.lineno)
    node.payload = outcome
    return node


PROGRESS_BYTES = 4 << 20


def read_session(path: Path, visit: EntryVisitor | None = None,
                 progress: Callable[[int], None] | None = None) -> SessionFile:
    """Read ``path`` (opened read-only; session files are never written here). ``progress(offset)`` hears how far
    the file has been read, every PROGRESS_BYTES (the progress bar moves within a large file, not only when it is
    done)."""
    with path.open("rb") as stream:
        size = path.stat().st_size
        result = SessionFile(path=path, size=size, header=None)
        migrate: Callable[[dict[str, Any], int], dict[str, Any]] | None = None  # for a v1 or v2 file
        seq = 0
        shortcut = visit.unparsed_tool_result if visit is not None else None
        fast: Callable[[str, str], Any] | None = None  # the shortcut, once a v3 header is read
        next_report = PROGRESS_BYTES
        for line in iter_lines(stream, block_bytes=min(BLOCK_BYTES, size + 1)):
            if progress is not None and line.offset >= next_report:
                progress(line.offset)
                next_report = line.offset + PROGRESS_BYTES
            if fast is not None:
                node = _unparsed_tool_result(line, seq, fast)
                if node is not None:
                    result.entries.append(node)
                    seq += 1
                    continue
            for item in parse_line(stream, line):
                if isinstance(item, Malformed):
                    if item.truncated_tail:
                        result.truncated_tail = True
                    else:
                        result.malformed.append(LineProblem(item.lineno, item.reason))
                    continue
                obj = item.obj
                result.surrogates_replaced += item.surrogates
                result.invalid_utf8_lines += int(item.invalid_utf8)
                if item.glued and (not result.glued_lines or result.glued_lines[-1] != item.lineno):
                    result.glued_lines.append(item.lineno)
                if result.header is None:
                    header = read_header(obj)
                    if isinstance(header, str):
                        result.problem = f"line {item.lineno}: {header}"
                        return result
                    result.header = header
                    if header.version == 3:
                        fast = shortcut
                    else:
                        migrate = Migrator(header.version).migrate
                    continue
                if obj.get("type") == "session":
                    continue  # pi ignores repeated headers (an old fork bug wrote them mid-file)
                if migrate is not None:
                    obj = migrate(obj, item.lineno)
                node = _index_row(obj, seq, item.lineno)
                if visit is not None:
                    node.payload = visit(obj, node)
                result.entries.append(node)
                seq += 1
        if visit is not None:
            visit.finish()  # a visitor may work in batches
        if result.header is None and result.problem is None:
            result.problem = "empty file" if not result.malformed else "no readable session header"
    return result


def _index_row(obj: dict[str, Any], seq: int, lineno: int) -> EntryNode:
    entry_id = obj.get("id")
    parent = obj.get("parentId")
    timestamp = obj.get("timestamp")
    kept = obj.get("firstKeptEntryId")
    entry_type = obj.get("type")
    return EntryNode(
        seq=seq,
        lineno=lineno,
        id=entry_id if isinstance(entry_id, str) and entry_id else f"L{lineno}",
        parent_id=parent if isinstance(parent, str) else None,
        type=entry_type if isinstance(entry_type, str) else "unknown",
        timestamp=timestamp if isinstance(timestamp, str) else None,
        first_kept_id=kept if isinstance(kept, str) else None,
    )


def peek_header(path: Path) -> SessionHeader | str:
    """The header alone (the first JSON object of the file), or why there is none. Reads only the start."""
    with path.open("rb") as stream:
        for item in iter_objects(stream, block_bytes=64 << 10):
            if isinstance(item, Malformed):
                continue
            return read_header(item.obj)
    return "empty file"
