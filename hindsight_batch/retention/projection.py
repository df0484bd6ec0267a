"""Turn one session entry into the compact record that may be retained, or say why nothing is.

The record keeps the entry's shape so that ``strip`` works as in the live extension::

    {"type":"message","id":…,"parentId":…,"timestamp":"<ISO>",
     "message":{"role":…,"content":[…blocks…], …role fields…}}

Only known fields are copied (so a new field pi adds never leaks in unannounced); ``strip.topLevel`` and
``strip.message`` then remove keys. Blocks: ``text``, ``thinking`` (no signature), ``toolCall`` as name and
arguments, ``image`` as a small note (never the base64 data). Text longer than ``import.maxBlockChars`` is cut.

What happens to entries that are not plain messages (documented in the README):
* ``hindsight-recall`` and every ``hindsight…`` custom type: dropped (S1), whatever the settings.
* other ``custom_message`` entries and ``custom``-role messages: dropped unless their ``customType`` matches
  ``import.retainCustomTypes``; then retained as role ``custom`` with their text.
* ``bashExecution`` (the user's ``!cmd``): treated as the tool ``bash`` run by the user: its command is kept when
  ``retainContent.assistant`` has ``toolCall`` and ``toolFilter.toolCall`` admits ``bash``; its output when
  ``retainContent.toolResult`` has ``text`` and ``toolFilter.toolResult`` admits ``bash``. ``!!`` commands
  (excluded from context by the user) are always dropped.
* ``compaction`` and ``branch_summary``: not retained (model-written restatements of transcript that is imported
  itself); counted as ``summary``. Exception: with ``import.compaction = context`` (pi's own view: the last
  compaction's summary, the entries it kept, and what followed) the summary is retained as role
  ``compactionSummary``, since it then stands in for the entries left out.
* everything else (model and thinking changes, labels, session info, ``custom`` state): not messages.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from hindsight_batch.config.model import Settings, ToolRule
from hindsight_batch.retention import memory_filter as mf

_MESSAGE_TYPES = {"message", "custom_message", "compaction", "branch_summary"}
_ROLE_FIELDS: dict[str, tuple[str, ...]] = {
    "user": ("timestamp",),
    "assistant": ("api", "provider", "model", "stopReason", "usage", "responseId", "timestamp"),
    "toolResult": ("toolName", "isError", "timestamp"),
    "custom": ("customType", "timestamp"),
}

MAX_VALUE_DEPTH = 64  # deeper parts of a kept value (tool arguments, usage) become a marker: see _bounded
TOO_DEEP = "[nested too deep]"


_TEXT_KEYS = {"text": "text", "thinking": "thinking"}  # the blocks of a message that hold text, by the key that does


def _texts(content: list[Any]) -> Iterator[tuple[int, str]]:
    """The text of each text block of ``content``, with its place."""
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(kind, str) and kind in _TEXT_KEYS:
            text = block.get(_TEXT_KEYS[kind])
            if isinstance(text, str):
                yield index, text


def _str(value: object) -> str:
    """A field the pipeline reads as text: a string, or "" for anything else (never ``str()`` of a container,
    whose repr may be nested a thousand levels deep)."""
    return value if isinstance(value, str) else ""


def _scalar(value: object) -> object:
    return value if value is None or isinstance(value, (str, int, float, bool)) else None


# What a projected message is built from besides its role's fields (which strip already left out).
_BUILT_KEYS = frozenset({"role", "content", "command", "output", "exitCode", "timestamp"})


@dataclass(slots=True)
class Projection:
    """The outcome for one entry. ``record`` is ``None`` when the entry contributes nothing."""

    role: str | None = None
    record: dict[str, Any] | None = None
    dropped: str | None = None  # why a message was not retained; None for non-message entries
    removed: dict[str, int] = field(default_factory=dict)  # blocks or spans removed, by reason

    def remove(self, reason: str, count: int = 1) -> None:
        self.removed[reason] = self.removed.get(reason, 0) + count

    @property
    def is_message(self) -> bool:
        return self.record is not None or self.dropped is not None


def tool_allowed(rule: ToolRule, name: str) -> bool:
    if rule.include is not None:
        return any(fnmatchcase(name, pattern) for pattern in rule.include)
    if rule.exclude is not None:
        return not any(fnmatchcase(name, pattern) for pattern in rule.exclude)
    return True


def iso_from_ms(value: object) -> str | None:
    """Epoch milliseconds as ISO 8601 UTC with milliseconds, as JavaScript's ``toISOString`` writes them."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            days, millis = divmod(math.floor(value), 86_400_000)
        except (OverflowError, ValueError):
            return None
        day = _iso_day(days)
        if day is None:
            return None
        seconds, millis = divmod(millis, 1000)
        minutes, seconds = divmod(seconds, 60)
        hours, minutes = divmod(minutes, 60)
        return f"{day}T{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}Z"
    return value if isinstance(value, str) else None


@functools.lru_cache(maxsize=1024)
def _iso_day(days: int) -> str | None:
    """The date of a day since the epoch (a session spans few days: cached)."""
    try:
        return time.strftime("%Y-%m-%d", time.gmtime(days * 86_400))
    except (OverflowError, OSError, ValueError):
        return None


class Projector:
    """Projects the entries of one session file, in file order (it remembers hindsight tool-call ids)."""

    def __init__(self, settings: Settings) -> None:
        self._content = settings.retain_content
        self._tools = settings.tool_filter
        self._custom_types = settings.import_.retain_custom_types
        self._max_chars = settings.import_.max_block_chars
        self._compaction_context = settings.import_.compaction == "context"
        self._hindsight_call_ids: set[str] = set()
        self._gate_by_name: dict[str, str | None] = {}  # a session names few tools, each many times
        # What strip leaves, worked out once: keys stripped anyway are never copied (nor their timestamps formatted).
        self._top_keys = tuple(k for k in ("type", "id", "parentId", "timestamp") if k not in settings.strip.top_level)
        self._role_fields = {
            role: tuple(k for k in keys if k not in settings.strip.message) for role, keys in _ROLE_FIELDS.items()
        }
        self._strip_built = tuple(k for k in settings.strip.message if k in _BUILT_KEYS)  # the others never get in

    def project(self, entry: dict[str, Any]) -> Projection:
        entry_type = entry.get("type")
        if not isinstance(entry_type, str) or entry_type not in _MESSAGE_TYPES:  # (a dict is not hashable)
            return Projection()
        if entry_type == "compaction" and self._compaction_context:
            return self._summary(entry)
        if entry_type in ("compaction", "branch_summary"):
            return Projection(dropped="summary")
        message: Any
        if entry_type == "custom_message":
            message = {
                "role": "custom",
                "customType": entry.get("customType"),
                "content": entry.get("content"),
                "timestamp": entry.get("timestamp"),
            }
        else:
            message = entry.get("message")
            if not isinstance(message, dict):
                return Projection(dropped="malformed")
        role = message.get("role")
        out = Projection(role=sys.intern(role) if isinstance(role, str) else None)  # kept per entry: one each
        if role == "custom":
            if mf.is_memory_custom_type(message.get("customType")):
                out.dropped = "recall"
                return out
            custom_type = message.get("customType")
            if not isinstance(custom_type, str) or not any(fnmatchcase(custom_type, p) for p in self._custom_types):
                out.dropped = "custom-message"
                return out
            blocks = self._blocks(message.get("content"), ["text"], out)
        elif role == "user":
            blocks = self._blocks(message.get("content"), self._content.user, out)
        elif role == "assistant":
            blocks = self._blocks(message.get("content"), self._content.assistant, out)
        elif role == "toolResult":
            name = _str(message.get("toolName"))
            out.dropped = self.tool_result_gate(name, message.get("toolCallId"))
            if out.dropped:
                return out
            blocks = self._blocks(message.get("content"), self._content.tool_result, out)
        elif role == "bashExecution":
            return self._bash(entry, message, out)
        else:
            out.dropped = "unknown-role"
            return out
        if not blocks:
            out.dropped = "recall" if out.removed.get("recall-block") else "empty"
            return out
        fields = {key: self._bounded(message[key], out) for key in self._role_fields.get(str(role), ())
                  if key in message}
        if "timestamp" in fields:
            fields["timestamp"] = iso_from_ms(message["timestamp"])
        out.record = self._record(entry, {"role": role, "content": blocks, **fields})
        return out

    def tool_result_gate(self, name: str, call_id: object) -> str | None:
        """Why a tool result with this name and call id is dropped whatever its content, or None. The reader
        asks this before parsing a tool-result line, so most tool output is never parsed at all."""
        if isinstance(call_id, str) and call_id in self._hindsight_call_ids:  # (a malformed id may be a list)
            return "hindsight-tool"
        try:
            return self._gate_by_name[name]
        except KeyError:
            reason = self._gate_by_name[name] = self._name_gate(name)
            return reason

    def _name_gate(self, name: str) -> str | None:
        if mf.is_hindsight_tool(name):
            return "hindsight-tool"
        if not self._content.tool_result:
            return "retain-content"
        if not tool_allowed(self._tools.tool_result, name):
            return "tool-filter"
        return None

    def _record(self, entry: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
        record = {key: _scalar(entry.get(key)) for key in self._top_keys}
        for key in self._strip_built:
            message.pop(key, None)
        record["message"] = message
        return record

    def _cut(self, text: str, out: Projection) -> str:
        if len(text) <= self._max_chars:
            return text
        out.remove("cut-long-text")
        return text[: self._max_chars] + f"…[cut {len(text) - self._max_chars} chars]"

    def _text(self, text: str, out: Projection) -> str | None:
        """S1 on one piece of text: drop it if it is injected memory, excise spliced memory blocks."""
        if mf.starts_with_memory(text):
            out.remove("recall-block")
            return None
        text, spans = mf.excise_memory(text)
        if spans:
            out.remove("recall-span", spans)
        return self._cut(text, out) if text and not text.isspace() else None  # (strip() would copy it)

    def _block_text(self, text: str, left_open: str, out: Projection) -> tuple[str | None, str]:
        """:meth:`_text` on one text block of a message, after blocks that left the memory openings ``left_open``
        unclosed: the text kept, and the openings this block leaves unclosed."""
        if not left_open and "<" not in text:
            return self._text(text, out), ""
        if not left_open and mf.starts_with_memory(text):
            out.remove("recall-block")
            return None, mf.excise_continued(text, "")[2]
        kept, spans, left_open = mf.excise_continued(text, left_open)
        if spans:
            out.remove("recall-span", spans)
        return (self._cut(kept, out) if kept and not kept.isspace() else None), left_open

    def _blocks(self, content: Any, allowed: Sequence[str], out: Projection) -> list[dict[str, Any]]:
        if content is None:
            return []
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            return []
        blocks: list[dict[str, Any]] = []
        # S1 over blocks: the memory openings an earlier text block left unclosed, whose span goes on to a closing
        # in a later block; where each closing is last seen (found once, when a block first leaves one open).
        left_open = ""
        closings: dict[str, int] | None = None
        for index, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            key = _TEXT_KEYS.get(kind) if isinstance(kind, str) else None  # (a type may be any JSON value)
            if key is not None and isinstance(block.get(key), str):
                if kind not in allowed:
                    out.remove("retain-content")
                    if left_open or "<" in block[key]:  # not kept, but a memory span may open or close in it
                        left_open = mf.excise_continued(block[key], left_open)[2]
                else:
                    text, left_open = self._block_text(block[key], left_open, out)
                    if text is not None:
                        blocks.append({"type": kind, key: text})
                if left_open:
                    if closings is None:
                        closings = mf.last_closings(_texts(content))
                    left_open = mf.still_open(left_open, index, closings)
            elif kind == "toolCall":
                name = _str(block.get("name"))
                if mf.is_hindsight_tool(name):
                    if isinstance(block.get("id"), str):
                        self._hindsight_call_ids.add(block["id"])
                    out.remove("hindsight-tool-call")
                    continue
                if "toolCall" not in allowed:
                    out.remove("retain-content")
                    continue
                if not tool_allowed(self._tools.tool_call, name):
                    out.remove("tool-filter")
                    continue
                arguments, spans = mf.scrub_value(block.get("arguments"))
                if spans:
                    out.remove("recall-span", spans)
                blocks.append({"type": "toolCall", "name": name, "arguments": self._cut_value(arguments, out, 0)})
            elif kind not in allowed:
                out.remove("retain-content")
            elif kind == "image":
                data = block.get("data")
                size = len(data) if isinstance(data, str) else 0
                note = f"image omitted ({size} bytes of base64)"
                blocks.append({"type": "image", "mimeType": _scalar(block.get("mimeType")), "note": note})
        return blocks

    def _cut_value(self, value: Any, out: Projection, depth: int) -> Any:
        if isinstance(value, str):
            return self._cut(value, out)
        if isinstance(value, (dict, list)) and depth >= MAX_VALUE_DEPTH:
            out.remove("too-deep")  # what no one reads, and what every recursive stage after this would choke on
            return TOO_DEEP
        if isinstance(value, dict):
            return {key: self._cut_value(item, out, depth + 1) for key, item in value.items()}
        if isinstance(value, list):
            return [self._cut_value(item, out, depth + 1) for item in value]
        return value

    def _bounded(self, value: Any, out: Projection) -> Any:
        """A role field copied as it is (``usage``, ``isError``…), with the same depth cap as tool arguments."""
        return value if value is None or isinstance(value, (str, int, float, bool)) else self._cut_value(
            value, out, 1)

    def _summary(self, entry: dict[str, Any]) -> Projection:
        """With ``import.compaction = context`` the compaction summary stands in for what it replaced."""
        out = Projection(role="compactionSummary")
        text = self._text(_str(entry.get("summary")), out)
        if text is None:
            out.dropped = "empty"
            return out
        message = {"role": "compactionSummary", "content": [{"type": "text", "text": text}]}
        out.record = self._record(entry, message)
        return out

    def _bash(self, entry: dict[str, Any], message: dict[str, Any], out: Projection) -> Projection:
        if message.get("excludeFromContext"):
            out.dropped = "excluded-from-context"
            return out
        fields: dict[str, Any] = {"role": "bashExecution"}
        if "toolCall" in self._content.assistant and tool_allowed(self._tools.tool_call, "bash"):
            command = self._text(_str(message.get("command")), out)
            if command is not None:
                fields["command"] = command
        if "text" in self._content.tool_result and tool_allowed(self._tools.tool_result, "bash"):
            output = self._text(_str(message.get("output")), out)
            if output is not None:
                fields["output"] = output
            if "exitCode" in message:
                fields["exitCode"] = _scalar(message["exitCode"])
        if len(fields) == 1:
            out.dropped = "retain-content"
            return out
        fields["timestamp"] = iso_from_ms(message.get("timestamp"))
        out.record = self._record(entry, fields)
        return out
