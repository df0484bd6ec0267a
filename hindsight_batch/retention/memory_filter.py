"""Safety rule S1, no memory echo: recognise anything that came from Hindsight memory.

Nothing recalled may be retained again: ``hindsight-recall`` entries in either shape, text that starts with an
injected-memory marker, memory blocks spliced into other text, and the calls and results of ``hindsight_*`` tools.
These checks run before, and regardless of, the user's ``retainContent`` and ``toolFilter``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# Opening markers of injected memory, with the closing tag of each. The live extensions use these four.
MEMORY_MARKERS: dict[str, str] = {
    "<hindsight_memories>": "</hindsight_memories>",
    "<hindsight-memory>": "</hindsight-memory>",
    "<hindsight-mental-models>": "</hindsight-mental-models>",
    "<mental_models>": "</mental_models>",
}
REMOVED = "[hindsight memory removed]"


def is_memory_custom_type(custom_type: object) -> bool:
    """``hindsight-recall`` and every other ``hindsight…`` custom type (status, mental models, meta)."""
    return isinstance(custom_type, str) and custom_type.lower().startswith("hindsight")


def is_hindsight_tool(name: object) -> bool:
    return isinstance(name, str) and name.lower().startswith(("hindsight_", "hindsight-"))


_OPENINGS = tuple(MEMORY_MARKERS)
_FIRST_NON_SPACE = re.compile(r"\s*+")


def starts_with_memory(text: str) -> bool:
    if not text[:1].isspace():  # most text: no leading space to skip
        return text.startswith(_OPENINGS)
    match = _FIRST_NON_SPACE.match(text)  # where ``text.lstrip()`` would start, without copying the text
    return text.startswith(_OPENINGS, match.end() if match else 0)


_LONGEST = max(len(opening) for opening in _OPENINGS)


def excise_memory(text: str) -> tuple[str, int]:
    """Remove every injected-memory span from ``text`` (an unclosed one runs to the end). Linear time.

    One pass from the left: a span runs from an opening marker to its closing marker, and on to the closing of any
    other opening inside it that closes later; an opening that the removal itself forms (``<hindsight_`` before a
    span, ``memories>`` after it) starts a span too, so no opening marker is left in the result."""
    kept, removed, _ = excise_continued(text, "")
    return kept, removed


def excise_continued(text: str, left_open: str) -> tuple[str, int, str]:
    """:func:`excise_memory` for one of the text blocks of a message, read in order: ``left_open`` holds the
    openings of the spans the blocks before left unclosed, whose bodies and closing tags here are memory too (S1:
    a memory block is one unit wherever its text blocks split). Returns the text kept, the spans removed, and the
    openings this block leaves unclosed ("" when none), for the next block."""
    if left_open:
        text = left_open + text  # the span goes on: as if its opening were here
    elif "<" not in text:
        return text, 0, ""
    found = {opening: text.find(opening) for opening in _OPENINGS}
    if max(found.values()) == -1:
        return text, 0, ""
    unclosed: list[str] = []  # openings whose closing the text does not hold (their span runs to its end)
    kept: list[str] = []
    tail = ""  # the last characters kept (an opening may start there and end after a removed span)
    removed = 0
    pos = 0
    while True:
        start = -1
        for at in found.values():  # each opening's next occurrence at or after pos, or -1
            if at != -1 and (start == -1 or at < start):
                start = at
        if start == -1:
            break
        piece = text[pos:start]
        kept.append(piece)
        tail = piece[-_LONGEST:] if len(piece) >= _LONGEST else (tail + piece)[-_LONGEST:]
        pos = _span_end(text, start + 1, found, unclosed)
        removed += 1
        while (joined := _joined_opening(tail, text, pos)) is not None:
            opening, k = joined  # the opening's first k characters are the end of what was kept
            _drop_tail(kept, k)
            tail = _tail(kept)
            pos = _span_end(text, _closing_end(text, opening, pos + len(opening) - k, unclosed), found, unclosed)
            removed += 1
    kept.append(text[pos:])
    return "".join(kept), removed, "".join(dict.fromkeys(unclosed)) if pos >= len(text) else ""


def last_closings(texts: Iterable[tuple[int, str]]) -> dict[str, int]:
    """For each opening marker, the last of the numbered ``texts`` that holds its closing marker (absent: none)."""
    last: dict[str, int] = {}
    for index, text in texts:
        if "</" in text:
            for opening, closing in MEMORY_MARKERS.items():
                if closing in text:
                    last[opening] = index
    return last


def still_open(left_open: str, index: int, last: dict[str, int]) -> str:
    """The openings of ``left_open`` that a text after the ``index``-th closes (:func:`last_closings`): a span
    goes on into the next text blocks only to a closing there, else it ends with its own block."""
    return "".join(o for o in _OPENINGS if o in left_open and last.get(o, -1) > index)


def _span_end(text: str, stop: int, found: dict[str, int], unclosed: list[str]) -> int:
    """Where a memory span that reaches at least ``stop`` ends: after the closing of every opening inside it
    (``found`` holds each opening's next occurrence; those inside the span are used up)."""
    changed = True
    while changed:
        changed = False
        for opening, at in found.items():
            while at != -1 and at < stop:
                end = _closing_end(text, opening, at + len(opening), unclosed)
                if end > stop:
                    stop, changed = end, True
                at = text.find(opening, end)  # an occurrence before ``end`` closes there too
            found[opening] = at
    return stop


def _closing_end(text: str, opening: str, after: int, unclosed: list[str]) -> int:
    closing = MEMORY_MARKERS[opening]
    end = text.find(closing, after)
    if end == -1:
        unclosed.append(opening)
        return len(text)
    return end + len(closing)


def _tail(kept: list[str]) -> str:
    tail = ""
    for piece in reversed(kept):
        tail = piece + tail
        if len(tail) >= _LONGEST:
            break
    return tail[-_LONGEST:]


def _joined_opening(tail: str, text: str, pos: int) -> tuple[str, int] | None:
    """An opening marker that starts in ``tail`` (the last characters kept) and ends in ``text`` at ``pos``."""
    at = tail.rfind("<")  # every opening holds one "<", its first character: only the last one can start it
    if at == -1:
        return None
    k = len(tail) - at
    for opening in _OPENINGS:
        if len(opening) > k and opening.startswith(tail[at:]) and text.startswith(opening[k:], pos):
            return opening, k
    return None


def _drop_tail(kept: list[str], count: int) -> None:
    while count > 0:
        last = kept.pop()
        if len(last) > count:
            kept.append(last[: len(last) - count])
            return
        count -= len(last)


MAX_DEPTH = 100  # a value nested deeper is replaced whole (it is no one's tool argument; recursion stays bounded)
TOO_DEEP = "[nested too deep]"


def scrub_value(value: Any, depth: int = 0) -> tuple[Any, int]:
    """Apply :func:`excise_memory` to every string inside ``value`` (tool arguments, for instance)."""
    if isinstance(value, str):
        if starts_with_memory(value):
            return REMOVED, 1
        return excise_memory(value)
    if isinstance(value, (dict, list)) and depth >= MAX_DEPTH:
        return TOO_DEEP, 0
    if isinstance(value, dict):
        total = 0
        out: dict[str, Any] = {}
        for key, item in value.items():
            out[key], n = scrub_value(item, depth + 1)
            total += n
        return out, total
    if isinstance(value, list):
        total = 0
        items = []
        for item in value:
            clean, n = scrub_value(item, depth + 1)
            items.append(clean)
            total += n
        return items, total
    return value, 0
