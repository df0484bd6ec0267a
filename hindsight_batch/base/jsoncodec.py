"""JSON in and out: orjson where it can, the standard library where it cannot.

Parsing session lines and serializing records is most of an import's work; orjson does both several times
faster than :mod:`json` (``scripts/bench.py``). It refuses a few things a session file may hold (a lone surrogate
escape written by JavaScript, NaN, invalid UTF-8); those lines go to the standard library, which reads them as
before, so what is read never depends on which parser read it.

The standard library is never handed a line unguarded: a number literal over :data:`MAX_NUMBER_CHARS` characters
(an integer: floats parse in linear time) and nesting deeper than the interpreter's recursion limit are parse
errors (``json.JSONDecodeError``), not a
``ValueError`` or ``RecursionError`` escaping from the parser. (orjson has its own cap: 1,024 levels.)
"""

from __future__ import annotations

import json
from typing import Any

import orjson

MAX_NUMBER_CHARS = 4300  # Python's own cap on int() of a decimal string (float() is linear: no cap needed)
_STD_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_STD_DUMPS_SORTED = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


class NumberTooLong(ValueError):
    pass


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise NumberTooLong(f"number literal over {MAX_NUMBER_CHARS:,} characters")
    return int(text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JavaScript's JSON.parse (pi) refuses NaN and Infinity too


LENIENT = json.JSONDecoder(parse_int=_parse_int)
STRICT = json.JSONDecoder(parse_int=_parse_int, parse_constant=_no_constant)


def raw_decode(decoder: json.JSONDecoder, text: str, pos: int) -> tuple[Any, int]:
    """``decoder.raw_decode`` with every failure turned into :class:`json.JSONDecodeError`."""
    try:
        return decoder.raw_decode(text, pos)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("nested too deep", text, pos) from None
    except ValueError as exc:  # a number literal too long, NaN in strict mode
        raise json.JSONDecodeError(str(exc), text, pos) from None


def loads(data: bytes | bytearray | str) -> Any:
    """Parse one JSON document; raises :class:`json.JSONDecodeError` or :class:`UnicodeDecodeError`."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    text = data if isinstance(data, str) else bytes(data).decode("utf-8")
    start = len(text) - len(text.lstrip(" \t\r\n"))
    value, end = raw_decode(LENIENT, text, start)
    if text[end:].strip(" \t\r\n"):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def dumps(value: Any, *, sort_keys: bool = False, strict: bool = False) -> bytes:
    """Compact JSON in UTF-8, non-ASCII kept. A lone surrogate (JSON allows it, UTF-8 does not) becomes '?', or
    with ``strict`` raises :class:`UnicodeEncodeError`."""
    try:
        data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except TypeError:  # a lone surrogate, an integer beyond 64 bits, a non-string key
        text = (_STD_DUMPS_SORTED if sort_keys else _STD_DUMPS)(value)
        return text.encode("utf-8", "strict" if strict else "replace")
    # orjson's bytes keep its buffer (4 KB at least, then the next power of two), never shrunk, for as long as the
    # row is held; a copy of the right size costs a few nanoseconds.
    return b"".join((data, b""))
