"""Tolerant, bounded-memory JSONL reading, the way pi itself reads session files.

Rules (``reference/pi-session-format.md`` §5): split on ``\\n`` only (never ``str.splitlines``), skip blank lines,
report a malformed line by number and keep going, recover two JSON objects glued on one line, and tolerate a
truncated last line (a live session may be mid-write).

Lines longer than ``big_line_bytes`` are never held in memory whole: they are parsed from the file with ijson's
event stream, and any string value in them longer than ``big_string_chars`` bytes is cut (such strings are tool output
that no retention setting keeps in full).

Nothing in a line can crash, stall or bloat the reader. A line is malformed when JavaScript's ``JSON.parse`` (pi)
refuses it (NaN, bad escapes…) and, by our caps, when it nests deeper than :data:`MAX_DEPTH` or holds an integer
literal over ``jsoncodec.MAX_NUMBER_CHARS`` digits (any number literal that long, on a big line). A line dense with
small values is read through the event stream too, keeping at most :data:`VALUE_BUDGET` values (past it only the
entry's own fields). Invalid UTF-8 is replaced by U+FFFD, as Node
does, and lone surrogate escapes (``\\ud800``) by U+FFFD too, so no later stage ever sees one; both are counted on
the :class:`ParsedObject`.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import ijson
import orjson

from hindsight_batch.base import jsoncodec
from hindsight_batch.errors import LONE_SURROGATE

BLOCK_BYTES = 4 << 20  # fewer, larger reads: measurably faster than 1 MB, still small next to the RSS budget
BIG_LINE_BYTES = 8 << 20
BIG_STRING_CHARS = 1 << 20
MAX_DEPTH = 1000  # orjson stops at 1,024 and the standard library at the recursion limit: one cap for all paths
DENSE_LINE_BYTES = 1 << 20  # a line this long is checked for density (many small values cost ~50 bytes each)
DENSE_VALUES = 200_000  # commas and brackets past this: read through the event stream, under VALUE_BUDGET
VALUE_BUDGET = 500_000  # values kept from one line read through the event stream
# What an entry needs to be indexed and projected, kept past the budget (at the entry and message levels).
_ESSENTIAL_KEYS = frozenset({
    "type", "id", "parentId", "timestamp", "message", "role", "toolCallId", "toolName", "customType", "content",
    "summary", "firstKeptEntryId", "firstKeptEntryIndex", "version", "cwd", "parentSession", "branchedFrom",
    "command", "output", "exitCode", "excludeFromContext", "isError",
})
_SURROGATE_ESCAPE = re.compile(r"\\[uU][dD][89a-fA-F]")  # a surrogate escape: maybe a lone one


# Not frozen: these are made once per line, and a frozen dataclass costs four times as much to build.
@dataclass(slots=True)
class RawLine:
    """One physical line: ``buffer[start:end]``. ``buffer`` is ``None`` for a big line, which is read again from
    the file when parsed.

    The buffer is the reader's, reused for the next block: a line is valid only until the next one is asked for.
    It is looked at in place (most tool output never leaves the buffer); ``data`` copies it out."""

    lineno: int
    offset: int
    length: int
    buffer: bytes | bytearray | None
    start: int
    end: int
    terminated: bool

    @property
    def data(self) -> bytes | bytearray | None:
        # A copy, not a memoryview: orjson parses a memoryview markedly slower than the copy costs.
        return None if self.buffer is None else self.buffer[self.start : self.end]


@dataclass(slots=True)
class ParsedObject:
    lineno: int
    offset: int
    obj: dict[str, Any]
    glued: bool  # recovered from a line that held more than one JSON value
    surrogates: int = 0  # lone surrogates replaced by U+FFFD in this object
    invalid_utf8: bool = False  # the line held invalid UTF-8, replaced by U+FFFD (set on the line's first object only)


@dataclass(slots=True)
class Malformed:
    lineno: int
    offset: int
    reason: str
    truncated_tail: bool  # the unterminated last line of the file: a write in progress, not corruption


class SessionStream(Protocol):
    """A session file opened for binary reading (``Path.open("rb")``, ``io.BytesIO``)."""

    def readinto(self, buffer: bytearray, /) -> int | None: ...
    def read(self, size: int = -1, /) -> bytes: ...
    def seek(self, offset: int, whence: int = 0, /) -> int: ...
    def tell(self) -> int: ...


def iter_lines(
    stream: SessionStream, big_line_bytes: int = BIG_LINE_BYTES, block_bytes: int = BLOCK_BYTES
) -> Iterator[RawLine]:
    """Yield every non-blank line of ``stream``; a line over ``big_line_bytes`` comes without its data.
    ``block_bytes`` is the read size (a small file or a header needs less than the default)."""
    buffer = bytearray(max(block_bytes, 1))  # read into again and again: no new memory per block or per line
    find = buffer.find
    lineno = 0
    offset = 0  # offset in the file of the block's first byte
    pending: list[bytes | bytearray] = []  # the start of a line that runs on into the next block
    pending_len = 0
    big = False  # the pending line is longer than big_line_bytes: its bytes are not kept
    while True:
        size = stream.readinto(buffer)
        if not size:
            break
        pos = 0
        if pending_len:  # the block's first line began in an earlier block (rare: one line per block at most)
            end = find(b"\n", 0, size)
            if end == -1:
                pending_len += size
                offset += size
                if big or pending_len > big_line_bytes:
                    big, pending = True, []
                else:
                    pending.append(buffer[:size])
                continue
            lineno += 1
            length = pending_len + end
            if big or length > big_line_bytes:
                yield RawLine(lineno, offset - pending_len, length, None, 0, 0, True)
            else:
                data = b"".join([*pending, buffer[:end]])
                if data.strip():
                    yield RawLine(lineno, offset - pending_len, length, data, 0, len(data), True)
            pending, pending_len, big = [], 0, False
            pos = end + 1
        while (end := find(b"\n", pos, size)) != -1:  # lines inside the block: the common case, kept short
            lineno += 1
            if end - pos > big_line_bytes:
                yield RawLine(lineno, offset + pos, end - pos, None, 0, 0, True)
            elif end > pos and (buffer[pos] == 0x7B or buffer[pos:end].strip()):  # "{": not blank
                yield RawLine(lineno, offset + pos, end - pos, buffer, pos, end, True)
            pos = end + 1
        if pos < size:
            pending_len = size - pos
            big = pending_len > big_line_bytes
            pending = [] if big else [buffer[pos:size]]
        offset += size
    if pending_len:
        lineno += 1
        if big:
            yield RawLine(lineno, offset - pending_len, pending_len, None, 0, 0, False)
        else:
            data = b"".join(pending)
            if data.strip():
                yield RawLine(lineno, offset - pending_len, pending_len, data, 0, len(data), False)


def iter_objects(
    stream: SessionStream,
    big_line_bytes: int = BIG_LINE_BYTES,
    big_string_chars: int = BIG_STRING_CHARS,
    block_bytes: int = BLOCK_BYTES,
) -> Iterator[ParsedObject | Malformed]:
    """Yield each JSON object of a JSONL stream in order, or a :class:`Malformed` record for a bad line."""
    for line in iter_lines(stream, big_line_bytes, block_bytes):
        yield from parse_line(stream, line, big_string_chars)


def parse_line(
    stream: SessionStream, line: RawLine, big_string_chars: int = BIG_STRING_CHARS, *, fast_path_tried: bool = False
) -> list[ParsedObject | Malformed]:
    """The objects of one line from :func:`iter_lines` (a big or dense line is read again from ``stream``).
    ``fast_path_tried``: :func:`parse_object` gave None for this line, so orjson would refuse it again (an exception
    Python builds, not free) or give what the standard library gives; it is not tried."""
    data = line.data
    if data is None or is_dense(data):
        return list(_parse_big_line(stream, line, big_string_chars))
    if fast_path_tried:
        return list(_parse_text(line, data))
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        # Node decodes invalid UTF-8 as U+FFFD before JSON.parse; do the same, value after value (glued objects).
        return list(_parse_text(line, data))
    if isinstance(value, dict):
        return [ParsedObject(line.lineno, line.offset, value, False)]
    return [Malformed(line.lineno, line.offset, "not a JSON object", False)]


def parse_object(line: RawLine) -> dict[str, Any] | None:
    """The common case of :func:`parse_line` without its wrappers: the one object of an ordinary line (neither big
    nor dense, read by orjson), as :func:`parse_line` would give it. None: anything else, which
    :func:`parse_line` then reads (a damaged line is parsed twice; an intact one once)."""
    buffer = line.buffer
    if buffer is not None and line.end > line.start and buffer[line.start] != 0x7B and holds_no_object(line):
        return None  # not "{": orjson would refuse it, at the cost of an exception
    data = line.data
    if data is None or is_dense(data):
        return None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def holds_no_object(line: RawLine) -> bool:
    """Whether :func:`parse_line` would give this line one :class:`Malformed` and nothing else, known without
    parsing it: a whole ordinary line (not big, too short to be dense) whose first character past JSON's
    whitespace is not "{". A caller that does not show why can count it as malformed: a damaged file may be
    nothing else, and parsing each of its lines would find nothing."""
    buffer = line.buffer
    if buffer is None or not line.terminated or line.end - line.start > DENSE_LINE_BYTES:
        return False
    pos = line.start
    while pos < line.end and buffer[pos] in _LEADING_SPACE:
        pos += 1
    return pos < line.end and buffer[pos] != 0x7B  # "{"


_LEADING_SPACE = b" \t\r"  # JSON's whitespace within a line


def is_dense(data: bytes | bytearray) -> bool:
    """Whether a line holds so many values that building them all would cost far more memory than the line."""
    if len(data) <= DENSE_LINE_BYTES:
        return False
    return data.count(b",") + data.count(b"[") + data.count(b"{") > DENSE_VALUES


def _parse_text(line: RawLine, data: bytes | bytearray) -> Iterator[ParsedObject | Malformed]:
    """Slow path (what orjson refused): decode value after value, recovering glued objects."""
    try:
        text = data.decode("utf-8")
        invalid_utf8 = False
    except UnicodeDecodeError:
        text, invalid_utf8 = str(data, "utf-8", "replace"), True
    values: list[dict[str, Any]] = []
    pos = 0
    end = len(text)
    malformed: Malformed | None = None
    while pos < end:
        while pos < end and text[pos] in " \t\r":
            pos += 1
        if pos >= end:
            break
        try:
            value, pos = jsoncodec.raw_decode(jsoncodec.STRICT, text, pos)
        except json.JSONDecodeError as exc:
            reason = f"invalid JSON at column {exc.pos + 1}: {exc.msg}"[:200]
            malformed = Malformed(line.lineno, line.offset, reason, not line.terminated)
            break
        if not isinstance(value, dict):
            malformed = Malformed(line.lineno, line.offset, "not a JSON object", False)
            break
        values.append(value)
    check = _SURROGATE_ESCAPE.search(text) is not None
    glued = len(values) > 1 or (malformed is not None and bool(values))
    for i, obj in enumerate(values):
        fixed = replace_lone_surrogates(obj) if check else 0
        yield ParsedObject(line.lineno, line.offset, obj, glued, fixed, invalid_utf8 and i == 0)
    if malformed is not None:
        yield malformed


def replace_lone_surrogates(value: dict[str, Any] | list[Any]) -> int:
    """Replace every lone surrogate in the strings (and keys) of ``value`` by U+FFFD, in place; how many.
    Iterative: the value may be nested as deep as the parser allowed."""
    count = 0
    stack: list[dict[str, Any] | list[Any]] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict) and any(LONE_SURROGATE.search(key) for key in item):
            pairs = list(item.items())
            item.clear()
            for key, sub in pairs:
                fixed, n = LONE_SURROGATE.subn("\ufffd", key)
                count += n
                item[fixed] = sub
        slots: Iterable[tuple[Any, Any]] = item.items() if isinstance(item, dict) else enumerate(item)
        for slot, sub in slots:  # (assigning to a slot changes neither a dict's size nor a list's)
            if isinstance(sub, str):
                if LONE_SURROGATE.search(sub):
                    item[slot], n = LONE_SURROGATE.subn("\ufffd", sub)
                    count += n
            elif isinstance(sub, (dict, list)):
                stack.append(sub)
    return count


class _Window:
    """A read-only view of ``length`` bytes of a file from ``offset``, for ijson."""

    def __init__(self, stream: SessionStream, offset: int, length: int) -> None:
        self._stream = stream
        self._pos = offset
        self._left = length

    def read(self, size: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        size = self._left if size < 0 else min(size, self._left)
        here = self._stream.tell()
        self._stream.seek(self._pos)
        data = self._stream.read(size)
        self._stream.seek(here)
        self._pos += len(data)
        self._left -= len(data)
        return data


class _StringCapper:
    """A read-only stream over a big line that shortens every JSON string literal longer than ``cap`` bytes.

    ijson (like any JSON parser) would otherwise hold a 50 MB tool output twice, in its buffer and as a str. This
    filter finds string ends with ``bytes.find`` (C speed), passes at most ``cap`` bytes of each string through,
    cut where it cannot split an escape or a UTF-8 sequence, and closes it with a marker, so the parser only ever
    sees a small document. Memory is then bounded by ``cap`` and the read size, whatever the line's length.
    """

    def __init__(self, source: _Utf8Repair, cap: int) -> None:
        self._source = source
        self._cap = cap
        self._number_run = 0  # length of the number-like run that ended the last piece outside strings
        self._inside = False
        self._kept = 0  # bytes of the current string passed through
        self._dropped = 0  # bytes of the current string left out
        self._odd_backslashes = False  # the current string's content so far ends in an odd run of backslashes

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""  # ijson probes with read(0) to tell bytes from text
        while True:  # an empty answer means end of input to the parser, so skip chunks that were all cut
            data = self._source.read(size if size > 0 else BLOCK_BYTES)
            if not data:
                return b""
            out = self._filter(data)
            if out:
                return out

    def _filter(self, data: bytes) -> bytes:
        out: list[bytes] = []
        i, n = 0, len(data)
        while i < n:
            if not self._inside:
                j = data.find(b'"', i)
                self._check_numbers(data[i:] if j == -1 else data[i:j])
                if j == -1:
                    out.append(data[i:])
                    break
                out.append(data[i : j + 1])
                self._number_run = 0
                i = j + 1
                self._inside, self._kept, self._dropped, self._odd_backslashes = True, 0, 0, False
                continue
            end = self._closing_quote(data, i)
            segment = data[i:n] if end == -1 else data[i:end]
            self._take(segment, out)
            if end == -1:
                self._odd_backslashes = _ends_in_odd_backslashes(segment, self._odd_backslashes)
                break
            if self._dropped:
                out.append(f"…[cut {self._dropped} bytes]".encode())
            out.append(b'"')
            self._inside = False
            i = end + 1
        return b"".join(out)

    def _check_numbers(self, piece: bytes) -> None:
        """A number literal over the cap ends the line as malformed before the parser buffers it (a huge one can
        crash it), also when it runs across reads."""
        if not piece:
            return
        lead = len(piece) - len(piece.lstrip(_NUMBER_CHARS))
        if lead == len(piece):
            self._number_run += lead
        else:
            if self._number_run + lead > jsoncodec.MAX_NUMBER_CHARS or _NUMBER_RUN.search(piece):
                raise LineTooComplex(f"number literal over {jsoncodec.MAX_NUMBER_CHARS:,} characters")
            self._number_run = len(piece) - len(piece.rstrip(_NUMBER_CHARS))
        if self._number_run > jsoncodec.MAX_NUMBER_CHARS:
            raise LineTooComplex(f"number literal over {jsoncodec.MAX_NUMBER_CHARS:,} characters")

    def _closing_quote(self, data: bytes, start: int) -> int:
        j = start
        while True:
            j = data.find(b'"', j)
            if j == -1:
                return -1
            k = j - 1
            while k >= start and data[k] == 0x5C:  # the backslashes just before this quote
                k -= 1
            odd = (j - 1 - k) % 2 == 1
            if k < start:
                odd = odd != self._odd_backslashes
            if not odd:
                return j
            j += 1

    def _take(self, segment: bytes, out: list[bytes]) -> None:
        room = self._cap - self._kept
        if room >= len(segment):
            out.append(segment)
            self._kept += len(segment)
            return
        cut = max(room, 0)
        if cut:
            cut = _safe_cut(segment, cut)
            out.append(segment[:cut])
        self._kept = self._cap
        self._dropped += len(segment) - cut


def _ends_in_odd_backslashes(data: bytes, carried_odd: bool) -> bool:
    run = len(data) - len(data.rstrip(b"\\"))
    if run == len(data):
        return carried_odd != (run % 2 == 1)
    return run % 2 == 1


def _safe_cut(segment: bytes, cut: int) -> int:
    """Move ``cut`` back so that it splits neither an escape sequence nor a UTF-8 character."""
    while cut > 0 and (segment[cut] & 0xC0) == 0x80:
        cut -= 1  # a UTF-8 continuation byte
    backslash = segment.rfind(b"\\", max(0, cut - 6), cut)
    if backslash != -1:
        run_start = backslash
        while run_start > 0 and segment[run_start - 1] == 0x5C:
            run_start -= 1
        if (backslash - run_start) % 2 == 0:  # this backslash starts an escape
            length = 6 if segment[backslash + 1 : backslash + 2] == b"u" else 2
            if backslash + length > cut:
                cut = backslash
    return cut


class _Utf8Repair:
    """Invalid UTF-8 in a big line becomes U+FFFD on the way to the parser, as Node reads it (the parser would
    refuse the line); ``replaced`` says whether any was."""

    def __init__(self, source: _Window) -> None:
        self._source = source
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.replaced = False

    def read(self, size: int = -1) -> bytes:
        data = self._source.read(size)
        text = self._decoder.decode(data, final=not data)
        if not self.replaced and "\ufffd" in text and text.count("\ufffd") > data.count(b"\xef\xbf\xbd"):
            self.replaced = True
        return text.encode("utf-8")


class LineTooComplex(ValueError):
    """A line past a structural cap (depth, number length): reported as a malformed line."""


_EVENT_BUFFER = 64 << 10  # ijson's C backend turns a whole buffer into events at once: small keeps that small
_NUMBER_RUN = re.compile(rb"[-+.eE0-9]{%d}" % (jsoncodec.MAX_NUMBER_CHARS + 1))
_NUMBER_CHARS = b"-+.eE0123456789"


def _parse_big_line(stream: SessionStream, line: RawLine, cap: int) -> Iterator[ParsedObject | Malformed]:
    repair = _Utf8Repair(_Window(stream, line.offset, line.length))
    window = _StringCapper(repair, cap)
    builder = _Builder()
    values: list[Any] = []
    try:
        for event, value in ijson.basic_parse(window, multiple_values=True, buf_size=_EVENT_BUFFER):
            done = builder.event(event, value)
            if done is not _PENDING:
                values.append(done)
    # ValueError: LineTooComplex, UnicodeDecodeError, int() limits; ArithmeticError: an exponent past what a
    # Decimal holds (1e99999999999999999999), which ijson raises as decimal.InvalidOperation.
    except (ijson.JSONError, ValueError, ArithmeticError) as exc:
        for i, obj in enumerate(values):
            if isinstance(obj, dict):
                yield ParsedObject(line.lineno, line.offset, obj, True, 0, repair.replaced and i == 0)
        if isinstance(exc, LineTooComplex):
            reason = str(exc)
        elif isinstance(exc, ArithmeticError):
            reason = "invalid JSON: a number out of range"
        else:
            reason = f"invalid JSON: {exc}"
        yield Malformed(line.lineno, line.offset, reason[:200], not line.terminated)
        return
    glued = len(values) > 1
    for i, obj in enumerate(values):
        if isinstance(obj, dict):
            yield ParsedObject(line.lineno, line.offset, obj, glued, 0, repair.replaced and i == 0)
        else:
            yield Malformed(line.lineno, line.offset, "not a JSON object", False)


_PENDING = object()


class _Builder:
    """Builds values from ijson events (the strings were already shortened by :class:`_StringCapper`).

    Deeper than :data:`MAX_DEPTH` is an error; past :data:`VALUE_BUDGET` values only the entry's and its message's
    essential fields are still built (a line of millions of tiny values would otherwise cost gigabytes)."""

    def __init__(self) -> None:
        self._stack: list[Any] = []
        self._keys: list[str | None] = []
        self._values = 0
        self._skip = 0  # > 0 while inside a container left out past the budget: its depth below the skip point

    def event(self, event: str, value: Any) -> Any:
        if self._skip:
            if event in ("start_map", "start_array"):
                self._skip += 1
            elif event in ("end_map", "end_array"):
                self._skip -= 1
            return _PENDING
        if event == "map_key":
            self._keys[-1] = value
            return _PENDING
        if event in ("start_map", "start_array"):
            if len(self._stack) >= MAX_DEPTH:
                raise LineTooComplex(f"nested deeper than {MAX_DEPTH} levels")
            if not self._keep():
                self._skip = 1
                return _PENDING
            self._stack.append({} if event == "start_map" else [])
            self._keys.append(None)
            return _PENDING
        if event in ("end_map", "end_array"):
            done = self._stack.pop()
            self._keys.pop()
            return self._add(done)
        if not self._keep():
            return _PENDING
        if event == "number" and not isinstance(value, int):
            value = float(value)
        return self._add(value)

    def _keep(self) -> bool:
        self._values += 1
        if self._values <= VALUE_BUDGET or not self._stack:
            return True
        return len(self._stack) <= 2 and isinstance(self._stack[-1], dict) and self._keys[-1] in _ESSENTIAL_KEYS

    def _add(self, value: Any) -> Any:
        if not self._stack:
            return value
        top = self._stack[-1]
        if isinstance(top, dict):
            top[self._keys[-1]] = value
        else:
            top.append(value)
        return _PENDING
