"""JSON in and out: orjson where it can, the standard library where it cannot.

Parsing session lines and serializing records is most of an import's work; orjson does both several times
faster than :mod:`json` (``scripts/bench.py``). It refuses a few things a session file may hold (a lone surrogate
escape written by JavaScript, NaN, invalid UTF-8); those lines go to the standard library, which reads them as
before, so what is read never depends on which parser read it.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_STD_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_STD_DUMPS_SORTED = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


def loads(data: bytes | bytearray | str) -> Any:
    """Parse one JSON document; raises :class:`json.JSONDecodeError` or :class:`UnicodeDecodeError`."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    """Compact JSON in UTF-8, non-ASCII kept. A lone surrogate (JSON allows it, UTF-8 does not) becomes '?'."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except TypeError:  # a lone surrogate, an integer beyond 64 bits, a non-string key
        return (_STD_DUMPS_SORTED if sort_keys else _STD_DUMPS)(value).encode("utf-8", "replace")
