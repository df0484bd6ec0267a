"""Anchored pattern matching: try a regex only where one of its literal starts occurs.

A pattern that begins with ``\\b``, a look-behind or an alternation gives Python's regex engine no literal prefix
to search for, so ``finditer`` tries it at every position of the text (tens of MB/s). Finding the literal starts
with ``str.find`` (memchr speed) and calling ``pattern.match`` only there is the same result, many times faster,
and keeps the work linear: each match is tried once per occurrence of an anchor.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator


def lower(text: str) -> str:
    """``text.lower()`` with the same length, so positions in one are positions in the other (a few characters,
    such as "İ", lowercase to two; those are left as they are)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(low := c.lower()) != 1 else low for c in text)


def anchored_matches(
    pattern: re.Pattern[str], text: str, lowered: str, anchors: Iterable[str]
) -> Iterator[re.Match[str]]:
    """Non-overlapping matches of ``pattern`` in ``text``, in order, each starting where a (lowercase) anchor
    occurs in ``lowered`` (from :func:`lower`). Every match of the pattern must start with one of the anchors."""
    starts: set[int] = set()
    for anchor in anchors:
        pos = lowered.find(anchor)
        while pos != -1:
            starts.add(pos)
            pos = lowered.find(anchor, pos + 1)
    covered = 0
    for pos in sorted(starts):
        if pos < covered:
            continue
        match = pattern.match(text, pos)
        if match is not None:
            covered = max(match.end(), pos + 1)
            yield match
