"""Typed views of a Pi session file: its header, its entry index and what went wrong while reading it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from hindsight_batch.base import jsoncodec

_Reduced = tuple[type, tuple[Any, ...]]  # what __reduce__ returns: a class and its constructor arguments


def _by_constructor(obj: Any) -> _Reduced:
    """How the classes here are pickled (``import --jobs`` sends them between processes): through their
    constructors, because a compiled (mypyc) class is restored by calling ``__init__``, with no arguments, and a
    frozen one refuses the field-by-field restore pickle does after that."""
    return type(obj), tuple(getattr(obj, f.name) for f in fields(obj))


@dataclass(frozen=True, slots=True)
class SessionHeader:
    id: str
    version: int  # after reading: 1, 2 or 3 (as found in the file; entries are migrated to v3 in memory)
    timestamp: str | None
    cwd: str | None
    parent_session: str | None  # path of the parent session file (`parentSession`, legacy `branchedFrom`)

    def __reduce__(self) -> _Reduced:
        return _by_constructor(self)

    @property
    def parent_session_id(self) -> str | None:
        """The parent's session id, taken from its file name ``<timestamp>_<id>.jsonl``."""
        if not self.parent_session:
            return None
        name = Path(self.parent_session).name
        stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
        return stem.rsplit("_", 1)[-1] or None


SUPPORTED_VERSIONS = (1, 2, 3)  # of the session format

# What JavaScript's Number() reads from a string, once its white space is trimmed ("" is 0).
_JS_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+")
# What JavaScript's String.prototype.trim removes (WhiteSpace and LineTerminator); prune reads it too.
JS_SPACE = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029"
            "\u202f\u205f\u3000\ufeff")


def session_version(raw: object) -> int | None:
    """The format version a header's ``version`` value is to pi, which compares ``header.version ?? 1`` with
    numbers, as JavaScript does: 3, 3.0, "3" and " 3 " are version 3, "2" and 2.0 version 2, a missing or null one
    (and true) version 1. None when that is not 1, 2 or 3: a derived tool's 4, text, 2.5, a list."""
    if raw is None:
        return 1
    number: float
    if isinstance(raw, (bool, int, float)):
        number = raw
    elif isinstance(raw, str):
        text = raw.strip(JS_SPACE)
        if not _JS_NUMBER.fullmatch(text):
            return None
        number = int(text, 0) if text[:2].lower() in ("0x", "0o", "0b") else float(text)
    else:
        return None
    return int(number) if number in SUPPORTED_VERSIONS else None


def header_text(header: SessionHeader) -> str:
    """The header as JSON text: how the ledger keeps a source's header (:func:`header_from_text`). ASCII: any
    header fits the column, even one holding a lone surrogate, which no UTF-8 text can (the reader replaces those;
    this does not rely on it)."""
    return json.dumps({"id": header.id, "version": header.version, "timestamp": header.timestamp,
                       "cwd": header.cwd, "parent_session": header.parent_session})


def header_from_text(text: str | None) -> SessionHeader | None:
    """The header :func:`header_text` wrote; None when there is none, or when the text is not one (then the file
    is read instead: the ledger is a cache here, never a source of truth it cannot check)."""
    if not text:
        return None
    try:
        data = jsoncodec.loads(text)
    except ValueError:  # (jsoncodec raises nothing else)
        return None
    if not isinstance(data, dict) or data.keys() != {"id", "version", "timestamp", "cwd", "parent_session"}:
        return None
    session_id, version = data["id"], data["version"]
    optional = (data["timestamp"], data["cwd"], data["parent_session"])
    if (not isinstance(session_id, str) or not session_id or type(version) is not int
            or version not in SUPPORTED_VERSIONS or not all(v is None or isinstance(v, str) for v in optional)
            or data["cwd"] == ""):
        return None
    return SessionHeader(session_id, version, data["timestamp"], data["cwd"], data["parent_session"])


@dataclass(slots=True)
class EntryNode:
    """One entry of the tree: the index row the reader keeps for every line, whatever its size.

    ``payload`` is whatever the caller's visitor returned for the entry (the import keeps its projection there),
    so the entry's full JSON never has to stay in memory.
    """

    seq: int
    lineno: int
    id: str
    parent_id: str | None
    type: str
    timestamp: str | None
    first_kept_id: str | None = None  # compaction entries only
    payload: Any = None

    def __reduce__(self) -> _Reduced:
        return _by_constructor(self)


KEPT_LINE_PROBLEMS = 50  # a file's malformed lines kept to be shown (the summary lists 50 of the whole run)


@dataclass(frozen=True, slots=True)
class LineProblem:
    lineno: int
    reason: str

    def __reduce__(self) -> _Reduced:
        return _by_constructor(self)


@dataclass(slots=True)
class SessionFile:
    path: Path
    size: int
    header: SessionHeader | None
    entries: list[EntryNode] = field(default_factory=list)
    malformed: list[LineProblem] = field(default_factory=list)  # the first KEPT_LINE_PROBLEMS (add_malformed)
    malformed_total: int = 0
    glued_lines: list[int] = field(default_factory=list)
    truncated_tail: bool = False
    problem: str | None = None  # set when the file is not a readable Pi session at all
    invalid_utf8_lines: int = 0  # lines whose invalid UTF-8 was replaced by U+FFFD
    surrogates_replaced: int = 0  # lone surrogate escapes replaced by U+FFFD

    @property
    def session_id(self) -> str:
        return self.header.id if self.header else ""

    def add_malformed(self, lineno: int, reason: str) -> None:
        """Count a malformed line; the first :data:`KEPT_LINE_PROBLEMS` are kept to be shown. A damaged file
        may be nothing but malformed lines, and keeping each would hold more memory than the file."""
        self.malformed_total += 1
        if self.keeps_more_problems():
            self.malformed.append(LineProblem(lineno, reason))

    def keeps_more_problems(self) -> bool:
        """Whether a malformed line's reason would still be kept (a reader need not parse a line to find it)."""
        return len(self.malformed) < KEPT_LINE_PROBLEMS
