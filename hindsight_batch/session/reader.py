"""Read one Pi session file into a :class:`SessionFile`: header, entry index, problems.

The reader makes one streaming pass. Each entry (already migrated to the v3 shape) is handed to an optional
visitor (:class:`hindsight_batch.interfaces.EntryVisitor`) whose return value is stored on the entry's index row;
the entry itself is then dropped. That keeps memory bounded by the index and by what the visitor keeps, not by the
file's size. A plain ``visit(entry, node)`` function is a visitor through :class:`EntryCallback`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight_batch.base.fsutil import open_regular, open_regular_file
from hindsight_batch.session.jsonl import (
    BLOCK_BYTES,
    Malformed,
    RawLine,
    holds_no_object,
    iter_lines,
    parse_line,
    parse_object,
)
from hindsight_batch.session.migrate import Migrator
from hindsight_batch.session.model import EntryNode, SessionFile, SessionHeader, session_version

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


MAX_CWD_BYTES = 4096  # PATH_MAX on Linux, in bytes


def read_header(obj: dict[str, Any]) -> SessionHeader | str:
    """Return the header, or the reason the object is not a usable session header."""
    if obj.get("type") != "session" or not isinstance(obj.get("id"), str) or not obj["id"]:
        return "first JSON object is not a Pi session header"
    raw_version = obj.get("version")
    version = session_version(raw_version)
    if version is None:
        shown = repr(raw_version)[:40] if isinstance(raw_version, (int, float, str)) else type(raw_version).__name__
        return f"unsupported session version {shown} (this tool reads versions 1, 2 and 3)"
    cwd = obj.get("cwd")
    if isinstance(cwd, str) and len(cwd.encode("utf-8", "replace")) > MAX_CWD_BYTES:
        # No process runs in a folder this deep (getcwd fails past PATH_MAX), so pi never wrote it; read as a path,
        # its thousands of parents cost gigabytes and end in "File name too long".
        return f"cwd is {len(cwd):,} characters long, longer than any folder pi can run in ({MAX_CWD_BYTES:,} bytes)"
    parent = obj.get("parentSession") or obj.get("branchedFrom")
    if isinstance(parent, dict):  # some tools write {id, file}
        parent = parent.get("file") or parent.get("id")
    timestamp = obj.get("timestamp")
    return SessionHeader(
        id=obj["id"],
        version=version,
        timestamp=timestamp if isinstance(timestamp, str) else None,
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        parent_session=parent if isinstance(parent, str) else None,
    )


PROGRESS_BYTES = 4 << 20


class _Reading:
    """The state of one read_session pass: what each entry adds to the :class:`SessionFile`."""

    def __init__(self, result: SessionFile, visit: EntryVisitor | None) -> None:
        self.result = result
        self.visit = visit
        self.seq = 0
        self.last: EntryNode | None = None  # the entry indexed last
        self.migrate: Callable[[dict[str, Any], int], dict[str, Any]] | None = None  # for a v1 or v2 file
        # The visitor's shortcut for tool results, once a v3 header is read.
        self.fast: Callable[[str, str], Any] | None = None

    def entry(self, obj: dict[str, Any], lineno: int) -> bool:
        """Index one object read from line ``lineno``; False when the file is not a session (no usable header)."""
        result = self.result
        if result.header is None:
            header = read_header(obj)
            if isinstance(header, str):
                result.problem = f"line {lineno}: {header}"
                return False
            result.header = header
            if header.version == 3:
                self.fast = self.visit.unparsed_tool_result if self.visit is not None else None
            else:
                self.migrate = Migrator(header.version).migrate
            return True
        entry_type = obj.get("type")
        if entry_type == "session":
            return True  # pi ignores repeated headers (an old fork bug wrote them mid-file)
        payload: Any = None
        visit = self.visit
        if self.migrate is not None:
            obj = self.migrate(obj, lineno)
            entry_type = obj.get("type")
        elif self.fast is not None and entry_type == "message":
            # A tool result whose content no setting keeps is indexed without being projected: the visitor's
            # shortcut says so from its tool name and call id (what projecting it would conclude, at a fraction
            # of the cost). Only with a string call id: the projection compares nothing else.
            message = obj.get("message")
            if isinstance(message, dict) and message.get("role") == "toolResult":
                call_id = message.get("toolCallId")
                if isinstance(call_id, str):
                    name = message.get("toolName")
                    payload = self.fast(name if isinstance(name, str) else "", call_id)
                    if payload is not None:
                        visit = None
        entry_id = obj.get("id")
        parent = obj.get("parentId")
        if self.last is not None and parent == self.last.id:
            parent = self.last.id  # the common case, a chain: one string for the id and the next entry's parent
        timestamp = obj.get("timestamp")
        kept = obj.get("firstKeptEntryId")
        node = EntryNode(
            self.seq,
            lineno,
            entry_id if isinstance(entry_id, str) and entry_id else f"L{lineno}",
            parent if isinstance(parent, str) else None,
            sys.intern(entry_type) if isinstance(entry_type, str) else "unknown",  # one "message" for all rows
            timestamp if isinstance(timestamp, str) else None,
            kept if isinstance(kept, str) else None,
            payload,
        )
        if visit is not None:
            node.payload = visit(obj, node)
        result.entries.append(node)
        self.last = node
        self.seq += 1
        return True


def read_session(path: Path, visit: EntryVisitor | None = None,
                 progress: Callable[[int], None] | None = None) -> SessionFile:
    """Read ``path`` (opened read-only; session files are never written here). ``progress(offset)`` hears how far
    the file has been read, every PROGRESS_BYTES (the progress bar moves within a large file, not only when it is
    done)."""
    with open_regular_file(path) as stream:
        size = os.fstat(stream.fileno()).st_size
        result = SessionFile(path=path, size=size, header=None)
        reading = _Reading(result, visit)
        entry = reading.entry
        next_report = PROGRESS_BYTES
        for line in iter_lines(stream, block_bytes=min(BLOCK_BYTES, size + 1)):
            if progress is not None and line.offset >= next_report:
                progress(line.offset)
                next_report = line.offset + PROGRESS_BYTES
            obj = parse_object(line)  # one parse per line: the common case, without the wrappers parse_line makes
            if obj is not None:
                if not entry(obj, line.lineno):
                    return result
                continue
            if not result.keeps_more_problems() and holds_no_object(line):
                result.malformed_total += 1  # its reason would not be shown: not parsed to find it
                continue
            for item in parse_line(stream, line, fast_path_tried=True):
                if isinstance(item, Malformed):
                    if item.truncated_tail:
                        result.truncated_tail = True
                    else:
                        result.add_malformed(item.lineno, item.reason)
                    continue
                result.surrogates_replaced += item.surrogates
                result.invalid_utf8_lines += int(item.invalid_utf8)
                if item.glued and (not result.glued_lines or result.glued_lines[-1] != item.lineno):
                    result.glued_lines.append(item.lineno)
                if not entry(item.obj, item.lineno):
                    return result
        if visit is not None:
            visit.finish()  # a visitor may work in batches
        if result.header is None and result.problem is None:
            result.problem = "empty file" if not result.malformed_total else "no readable session header"
    return result


_PEEK_BYTES = 4096  # a header line is a few hundred bytes


def peek_header(path: Path) -> SessionHeader | str:
    """The header alone (the first JSON object of the file), or why there is none. Reads only the start.

    The common case, a whole first line that is an ordinary line (:func:`parse_object`), is read from the first
    block; anything else goes through the reader's own lines. A catch-up run peeks at every file it reuses."""
    fd = open_regular(path)
    try:
        start = os.read(fd, _PEEK_BYTES)
    finally:
        os.close(fd)
    line, newline, _ = start.partition(b"\n")
    obj = parse_object(RawLine(1, 0, len(line), line, 0, len(line), True)) if newline else None
    if obj is not None:
        return read_header(obj)
    return _header_from_lines(path)


def _header_from_lines(path: Path) -> SessionHeader | str:
    """:func:`peek_header` through the reader's lines: blank lines, glued objects, a damaged line skipped."""
    with open_regular_file(path) as stream:
        for line in iter_lines(stream, block_bytes=64 << 10):
            if holds_no_object(line):
                continue  # malformed: skipped without being parsed (a long file of text has no header)
            for item in parse_line(stream, line):
                if not isinstance(item, Malformed):
                    return read_header(item.obj)
    return "empty file"
