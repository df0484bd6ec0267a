"""A quick look at a session file's message entries, outside planning: what the live extensions' records and cursors
are matched against (their content, their ids)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.fsutil import open_regular_file


def message_entries(path: Path) -> Iterator[dict[str, Any]]:
    """The ``message`` entries of ``path`` that have a string id, in file order, each line parsed alone (a line pi
    cannot parse is skipped, as pi drops it). One line at a time: a session may be hundreds of MB. Opened as a
    regular file only (:func:`hindsight_batch.base.fsutil.open_regular`); an ``OSError`` is the caller's."""
    with open_regular_file(path) as stream:
        for line in stream:
            if b'"message"' not in line:
                continue
            try:
                entry = jsoncodec.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("type") == "message" and isinstance(entry.get("id"), str):
                yield entry
