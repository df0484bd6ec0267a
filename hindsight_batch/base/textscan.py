"""Anchored pattern matching: try a regex only where one of its literal starts occurs.

A pattern that begins with ``\\b``, a look-behind or an alternation gives Python's regex engine no literal prefix
to search for, so ``finditer`` tries it at every position of the text (tens of MB/s). Finding the literal starts
with ``str.find`` (memchr speed) and calling ``pattern.match`` only there is the same result, many times faster,
and keeps the work linear: each match is tried once per occurrence of an anchor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

_LONGER = "\u0130"  # "İ", the one character whose lowercase is longer ("i̇", two), as Python 3.11's Unicode has it


def lower(text: str) -> str:
    """``text.lower()`` with the same length, so positions in one are positions in the other: a character whose
    lowercase is longer ("İ") is left as it is. The text is lowered between such characters: character by
    character, a text with one "İ" (Turkish prose) took as long as all other routing of its chunk."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    lowered = _LONGER.join(part.lower() for part in text.split(_LONGER))
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(low := c.lower()) != 1 else low for c in text)  # another such character (a newer Unicode)


def anchored_matches(
    pattern: re.Pattern[str],
    text: str,
    lowered: str,
    anchors: Iterable[str],
    accept: Callable[[re.Match[str]], bool] | None = None,
    possible: Callable[[int], bool] | None = None,
    lean: tuple[re.Pattern[str], Callable[[int], bool]] | None = None,
) -> Iterator[re.Match[str]]:
    """Non-overlapping matches of ``pattern`` in ``text``, in order, each starting where a (lowercase) anchor
    occurs in ``lowered`` (from :func:`lower`). Every match of the pattern must start with one of the anchors.
    A match ``accept`` refuses is not yielded and does not hide a later anchor inside it ("bearer token X": the
    word "token" is refused as the value of "bearer", then "token X" is tried). An anchor where ``possible`` (if
    given) says no match can start is not tried. With ``lean`` (a pattern and a test of a position), the lean
    pattern is tried where the test says ``pattern`` is not needed: it must match the same there."""
    starts: set[int] = set()
    for anchor in anchors:
        pos = lowered.find(anchor)
        while pos != -1:
            starts.add(pos)
            pos = lowered.find(anchor, pos + 1)
    covered = 0
    ordered = sorted(starts)
    for index, pos in enumerate(ordered):
        if pos < covered or (possible is not None and not possible(pos)):
            continue
        match = (pattern if lean is None or lean[1](pos) else lean[0]).match(text, pos)
        if match is None:
            continue
        if accept is None or accept(match):
            covered = max(match.end(), pos + 1)
            yield match
            continue
        # Refused: the rest of the value is done with, but not the name before it (a refused "AUTH" in
        # NEXTAUTH_SECRET does not hide "SECRET"), nor the value where an anchor begins it ("bearer token X": the
        # word "token" is refused as the value of "bearer", then "token X" is tried). Each anchor is tried once.
        covered = match.end()
        value_start = match.start(match.lastindex or 0)
        if index + 1 < len(ordered) and ordered[index + 1] <= value_start:
            covered = ordered[index + 1]
