"""Safety rule S1, no memory echo: recognise anything that came from Hindsight memory.

Nothing recalled may be retained again: ``hindsight-recall`` entries in either shape, text that starts with an
injected-memory marker, memory blocks spliced into other text, and the calls and results of ``hindsight_*`` tools.
These checks run before, and regardless of, the user's ``retainContent`` and ``toolFilter``.
"""

from __future__ import annotations

import re
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


def excise_memory(text: str) -> tuple[str, int]:
    """Remove every injected-memory span from ``text`` (an unclosed one runs to the end). Linear time."""
    if "<" not in text:
        return text, 0
    removed = 0
    for opening, closing in MEMORY_MARKERS.items():
        start = text.find(opening)
        while start != -1:
            end = text.find(closing, start + len(opening))
            stop = len(text) if end == -1 else end + len(closing)
            text = text[:start] + text[stop:]
            removed += 1
            start = text.find(opening, start)
    return text, removed


def scrub_value(value: Any) -> tuple[Any, int]:
    """Apply :func:`excise_memory` to every string inside ``value`` (tool arguments, for instance)."""
    if isinstance(value, str):
        if starts_with_memory(value):
            return REMOVED, 1
        return excise_memory(value)
    if isinstance(value, dict):
        total = 0
        out: dict[str, Any] = {}
        for key, item in value.items():
            out[key], n = scrub_value(item)
            total += n
        return out, total
    if isinstance(value, list):
        total = 0
        items = []
        for item in value:
            clean, n = scrub_value(item)
            items.append(clean)
            total += n
        return items, total
    return value, 0
