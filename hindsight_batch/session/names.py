"""How a session file is named in what this tool writes: the manifest, the ledger, summaries and uploads.

A Linux file name is bytes. Python keeps a byte that is not UTF-8 as a lone surrogate (``\\udce9``), which no
UTF-8 file, DuckDB text or JSON request can hold, so such a file once failed by name on every run. Its name is
written with each such byte as ``\\xNN`` instead (``caf\\xe9.jsonl``), and a backslash in it as two, so the name
leads back to the file; every other name is its path as it is. (A UTF-8 name that already reads like such an
escape, ``a\\xe9``, names both itself and the file whose name holds the byte: which pi never writes.)
"""

from __future__ import annotations

import os
import re

from hindsight_batch.errors import LONE_SURROGATE, without_surrogates

# What :func:`source_name` writes in a name that holds such a byte: "\\xNN" for it, "\\\\" for a backslash.
_ESCAPE = re.compile(rb"\\(\\|x[89a-f][0-9a-f])")


def source_name(path: str | os.PathLike[str]) -> str:
    """``path`` as text any UTF-8 output holds; the same path always gives the same name."""
    return _as_text(os.fspath(path), escape=True)


def source_path(name: str) -> str:
    """The file :func:`source_name` named ``name`` (a ledger's or a review's record of it). A name written as it
    is comes back as it is, also when it holds a literal ``\\x`` followed by two hex digits and exists."""
    if "\\x" not in name or os.path.lexists(name):
        return name
    raw = _ESCAPE.sub(_unescape, name.encode("utf-8", "surrogateescape"))
    return os.fsdecode(raw)


def _unescape(match: re.Match[bytes]) -> bytes:
    escape = match.group(1)
    return b"\\" if escape == b"\\" else bytes([int(escape[1:], 16)])


def node_path(path: str | os.PathLike[str]) -> str:
    """``path`` as the live extension (Node) sees it: each byte that is not UTF-8 read as U+FFFD."""
    return _as_text(os.fspath(path), escape=False)


def _as_text(text: str, *, escape: bool) -> str:
    if text.isascii() or LONE_SURROGATE.search(text) is None:  # (isascii: a flag of the string, no scan)
        return text
    try:
        raw = os.fsencode(text)  # the name's bytes, as the file system has them
    except UnicodeEncodeError:  # a surrogate no file name decodes to: not a path from the file system
        return without_surrogates(text)[0]
    if not escape:
        return raw.decode("utf-8", "replace")
    return raw.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")  # the backslash too: reversible
