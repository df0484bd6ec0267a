"""Who wrote each piece of a chunk: the user, the agent, or something the agent read or ran.

A chunk is projected JSONL records (``retention/projection.py``): ``{"message": {"role": …, "content": [blocks]}}``.
Only the text blocks of ``user`` messages are the user's own words. Assistant text and thinking, summaries and
custom messages are the agent's; tool calls, tool results and ``bashExecution`` commands and output are what the
agent ran or read. Routing reads User Bank signals in the user's text alone, so nothing an agent, a file, a web page
or a tool printed can make a chunk a User Bank candidate, however it is phrased.

A line that is not a JSON record is plain text: what ``route TEXT`` is given, which ``import`` would see as a user
message holding that text. Inside the user's text, what the user pasted rather than wrote is set apart with what
the agent read: fenced code, HTML comments, quoted (``>``) lines, code-comment lines and ``<file>``-like blocks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hindsight_batch.base import jsoncodec
from hindsight_batch.retention.memory_filter import starts_with_memory

# String fields of a projected record that are structure, never text (``note``: the image placeholder).
_STRUCTURAL_KEYS = frozenset(
    {"type", "role", "id", "parentId", "timestamp", "mimeType", "note", "toolName", "customType", "api",
     "provider", "model", "stopReason", "responseId", "name"}
)
_AGENT_ROLES = frozenset({"assistant", "custom", "compactionSummary", "branchSummary"})
# Roles whose text is all in ``content`` (their other fields are structure: usage, model, toolName, isError…).
_MESSAGE_ROLES = frozenset({"user", "assistant", "toolResult", "custom", "compactionSummary"})

# Pasted rather than written: fenced code, HTML comments, <file>/<document>-like blocks (each to its end or the end
# of the text), then whole lines quoted with ">" or starting as a code comment.
_PASTED_SPAN = re.compile(
    r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|<!--.*?(?:-->|\Z)"
    r"|<(file|document|attachment|readme|content|source)\b[^>]{0,300}>.*?(?:</\1\s*>|\Z)",
    re.S | re.I,
)
_PASTED_LINE = re.compile(r"^[ \t]*(?:>|//|/\*|#!|--[ \t])", re.M)


@dataclass(frozen=True, slots=True)
class Authored:
    """A chunk's text by who wrote it."""

    user: str  # the user's own words: user messages and plain text, without what was pasted into them
    agent: str  # assistant text and thinking, summaries, custom messages
    read: str  # tool calls, commands, what the user pasted, any other field of a record
    output: str = ""  # what tools and commands returned: tool results, bashExecution output
    memory_block: bool = False  # some text starts with an injected-memory marker (S1: import drops it whole)

    @property
    def others(self) -> str:
        """Everything the user did not write."""
        return "\n".join(part for part in (self.agent, self.read, self.output) if part)

    @property
    def all(self) -> str:
        return "\n".join(part for part in (self.user, self.agent, self.read, self.output) if part)


def _strings(value: Any, out: list[str]) -> None:
    """Every string value inside ``value`` except structural fields (keys and structure are never text)."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not (isinstance(item, str) and key in _STRUCTURAL_KEYS):
                _strings(item, out)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)


def split_pasted(text: str) -> tuple[str, str]:
    """``text`` as (what its writer wrote, what was pasted into it)."""
    pasted: list[str] = []
    if "```" in text or "~~~" in text or "<" in text:
        def keep(match: re.Match[str]) -> str:
            pasted.append(match.group(0))
            return "\n"

        text = _PASTED_SPAN.sub(keep, text)
    if _PASTED_LINE.search(text):
        written: list[str] = []
        for line in text.split("\n"):
            (pasted if _PASTED_LINE.match(line) else written).append(line)
        text = "\n".join(written)
    return text, "\n".join(pasted)


def _user_text(text: str, user: list[str], read: list[str]) -> None:
    written, pasted = split_pasted(text)
    user.append(written)
    if pasted:
        read.append(pasted)


def _record(message: dict[str, Any], user: list[str], agent: list[str], read: list[str], output: list[str]) -> bool:
    """Sort one projected message's text; True if a text of it starts with injected memory."""
    role = message.get("role")
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    memory = False
    if isinstance(blocks, list):
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            text = block.get("text") if kind == "text" else block.get("thinking") if kind == "thinking" else None
            if isinstance(text, str):
                memory = memory or starts_with_memory(text)
                if role == "user":
                    _user_text(text, user, read)
                else:
                    (agent if role in _AGENT_ROLES else output if role == "toolResult" else read).append(text)
            elif kind == "toolCall":
                _strings(block.get("arguments"), read)
    if role not in _MESSAGE_ROLES:  # bashExecution's command and output; any field of a record of another kind
        if isinstance(message.get("output"), str):
            output.append(message["output"])
        _strings({key: value for key, value in message.items() if key not in ("role", "content", "output")}, read)
    return memory


def authored(content: str) -> Authored:
    """Split a chunk (projected JSONL records, or plain text) by who wrote each piece."""
    user: list[str] = []
    agent: list[str] = []
    read: list[str] = []
    output: list[str] = []
    plain: list[str] = []
    memory = False

    def flush_plain() -> None:
        nonlocal memory
        if plain:
            text = "\n".join(plain)
            memory = memory or starts_with_memory(text)
            _user_text(text, user, read)
            plain.clear()

    for line in content.split("\n"):
        stripped = line.strip()
        value: Any = None
        if stripped.startswith("{"):
            try:
                value = jsoncodec.loads(stripped)
            except ValueError:
                value = None
        if not isinstance(value, dict):
            plain.append(line)
            continue
        flush_plain()
        message = value.get("message")
        if not isinstance(message, dict):
            message = value if "role" in value else None
        if message is None:  # a JSON object that is not a message (a dump pasted into `route`): output
            _strings(value, output)
        else:
            memory = _record(message, user, agent, read, output) or memory
    flush_plain()
    return Authored("\n".join(user), "\n".join(agent), "\n".join(read), "\n".join(output), memory)


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
# A sentence that asks for memory rather than giving it: "remind me of my preferences", "what do you know about me".
_REQUEST = re.compile(r"(?:please\s+|pls\s+|can\s+you\s+|could\s+you\s+)?(?:remind\s+me|summari[sz]e|list|show\s+me"
                      r"|tell\s+me|recall|look\s+up|what\s+do\s+you\s+(?:know|remember))\b", re.I)


def told_and_asked(text: str) -> tuple[str, str]:
    """The user's words as (what they state, what they ask): questions ("Should I always use tabs?") and requests
    for what memory holds ("remind me of my preferences") are not statements about the user."""
    if "?" not in text and "？" not in text and not _REQUEST.search(text):
        return text, ""
    told: list[str] = []
    asked: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        stripped = sentence.strip().rstrip("\"')»”’")
        question = stripped.endswith(("?", "？"))
        (asked if question or _REQUEST.match(stripped) else told).append(sentence)
    return "\n".join(told), "\n".join(asked)
