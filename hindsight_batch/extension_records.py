"""Which entries of a session hindsight-pi already holds by its own means, found by content: its backfill documents
(their text lists the entries, ids included) and the records still in its retain queue (which ``flush`` sends).

* ``/hindsight:parse-and-upsert-session`` and ``/hindsight:upsert-historical-sessions`` (hindsight-pi
  extensions/commands.ts) retain ``JSON.stringify(records)``, records being ``{id, parentId, timestamp, type,
  message}`` of every ``message`` entry (extensions/session-document.ts ``parseCurrentSessionEntries``), under the
  session id (``update_mode: replace``) or the file's name without ``.jsonl``, tagged ``store_method:import``. The
  live retains that follow append one ``JSON.stringify(prepareRetainEntry(…))`` line each to the same document.
  :func:`backfill_ids` reads the ids from every line of such a text that is a list of records.
* Its queue ``$HINDSIGHT_QUEUE_ROOT`` or ``~/.hindsight/pi-queues/<safe(session id)>.auto.jsonl`` (extensions/
  queue.ts ``queuePath``) holds one record per message queued at ``message_end`` and not yet flushed (extensions/
  index.ts): ``content`` is ``JSON.stringify(prepareRetainEntry({type: "message", message, timestamp}))``, the
  message without its entry id. :func:`queued_ids` finds each record's entry by role and text, the nearest in time
  when several match; a record it cannot place is counted, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from hindsight_batch import jsoncodec
from hindsight_batch.config.families import home_of


def backfill_ids(text: str | None) -> frozenset[str]:
    """The entry ids listed by hindsight-pi's backfill content: each line of the document's text that is a JSON
    list of records with a string ``id``."""
    found: set[str] = set()
    for line in (text or "").split("\n"):
        if not line.startswith("["):
            continue
        try:
            records = jsoncodec.loads(line)
        except ValueError:
            continue
        if isinstance(records, list):
            found.update(r["id"] for r in records if isinstance(r, dict) and isinstance(r.get("id"), str))
    return frozenset(found)


def queue_path(session_id: str, env: Mapping[str, str]) -> Path:
    """hindsight-pi extensions/queue.ts ``queuePath(sessionId, "auto")``."""
    root = Path(env.get("HINDSIGHT_QUEUE_ROOT") or Path(home_of(env)) / ".hindsight" / "pi-queues")
    safe = re.sub(r"[^a-zA-Z0-9_.-]+", "-", session_id)[:120] or "default"
    return root / f"{safe}.auto.jsonl"


class Queued(NamedTuple):
    ids: frozenset[str]  # entries whose message is still queued
    unplaced: int  # queued records no entry was found for
    path: Path


class Held(NamedTuple):
    """What one of hindsight-pi's documents holds of a session, read from its text."""

    ids: frozenset[str]  # the entries it holds
    records: int  # the lines it holds (a backfill's list counts once per entry)
    unplaced: int  # live records no entry was found for


# hindsight-pi extensions/upload.ts ``SECRET_PATTERNS``, applied by ``sanitizeCredentials`` to every text block
# before a message is queued (extensions/retain/prepare.ts ``prepareRetainMessage``): an entry's text is compared
# with a record's only after the same replacement.
_SECRET_PATTERNS = (
    re.compile(r"""(?:api[_-]?key|secret|token|password)\s*[:=]\s*['"]?([^\s'"`,;}{]{8,})['"]?""", re.IGNORECASE),
    re.compile(r"\bsk-[A-Za-z0-9\-]{20,}\b"),
    re.compile(r"\bhch-v\d+-[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bBearer\s+[A-Za-z0-9\-._~+/]{20,}=*"),
)


def sanitize_credentials(text: str) -> str:
    """hindsight-pi's ``sanitizeCredentials``: each pattern's matches become ``<REDACTED>``, in turn."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub("<REDACTED>", text)
    return text


Key = tuple[str, tuple[str, ...]]


def _key(message: Any, sanitized: bool = False) -> Key | None:
    """A message's role and the text of its text blocks (a string content is one text); ``sanitized``: the texts
    as hindsight-pi queues them (an entry's message, compared with a record)."""
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        return None
    content = message.get("content")
    if isinstance(content, str):
        texts: tuple[str, ...] = (content,)
    elif isinstance(content, list):
        texts = tuple(b["text"] for b in content
                      if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    else:
        return None
    return message["role"], tuple(sanitize_credentials(t) for t in texts) if sanitized else texts


def _seconds(stamp: Any) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _record(prepared: Any) -> tuple[Key, float | None] | None:
    """A prepared entry (``prepareRetainEntry``'s ``{message, timestamp}``) as its key and time, or None."""
    if not isinstance(prepared, dict) or (key := _key(prepared.get("message"))) is None:
        return None
    return key, _seconds(prepared.get("timestamp"))


def _session_messages(session_file: Path) -> dict[Key, list[tuple[str, float | None]]] | None:
    """The session's message entries by key (their texts as hindsight-pi would queue them): (id, time) each."""
    try:
        data = session_file.read_bytes()
    except OSError:
        return None
    entries: dict[Key, list[tuple[str, float | None]]] = {}
    for line in data.split(b"\n"):
        if b'"message"' not in line:
            continue
        try:
            entry = jsoncodec.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") != "message" or not isinstance(entry.get("id"), str):
            continue
        key = _key(entry.get("message"), sanitized=True)
        if key is not None:
            entries.setdefault(key, []).append((entry["id"], _seconds(entry.get("timestamp"))))
    return entries


def place(session_file: Path, records: list[tuple[Key, float | None]]) -> tuple[frozenset[str], int]:
    """The entries hindsight-pi's records (queued, or lines of its live document) were made from, found by role
    and text, the nearest in time when several match (a record's time is when ``message_end`` fired, within a
    second of the entry's); and how many records match no entry (counted, never guessed)."""
    if not records:
        return frozenset(), 0
    entries = _session_messages(session_file)
    if entries is None:
        return frozenset(), len(records)
    found: set[str] = set()
    unplaced = 0
    for key, when in records:
        candidates = [c for c in entries.get(key, []) if c[0] not in found]
        if not candidates:
            unplaced += 1
            continue
        best = min(candidates, key=lambda c: abs((c[1] or 0.0) - (when or 0.0)) if when and c[1] else 0.0)
        found.add(best[0])
    return frozenset(found), unplaced


def held_by_text(text: str | None, session_file: Path) -> Held:
    """The entries a document of hindsight-pi's holds, by its text: each line that is a backfill's list of records
    gives their ids (:func:`backfill_ids`); each line that is a live record (``JSON.stringify(prepareRetainEntry(
    …))``, extensions/index.ts ``message_end``: ``{message: {role, content}, timestamp}``, no entry id) is placed
    by :func:`place`. The live document is these lines joined by ``\\n`` (its flush sends each as an item under
    the session's id): what the server holds is exactly what its text lists, so a turn the extension lost (a
    second flush replaced the first: its client drops ``update_mode``) is not counted as held."""
    ids = set(backfill_ids(text))
    live: list[tuple[Key, float | None]] = []
    records = len(ids)
    for line in (text or "").split("\n"):
        if not line.startswith("{"):
            continue
        try:
            record = _record(jsoncodec.loads(line))
        except ValueError:
            continue
        if record is not None:
            live.append(record)
    placed, unplaced = place(session_file, live)
    return Held(frozenset(ids | placed), records + len(live), unplaced)


def queued_ids(session_file: Path, session_id: str, env: Mapping[str, str]) -> Queued | None:
    """The entries whose messages wait in hindsight-pi's queue for this session; None when it has no queue."""
    path = queue_path(session_id, env)
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    records: list[tuple[Key, float | None]] = []
    unplaced = 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = jsoncodec.loads(line)
            prepared = jsoncodec.loads(record["content"]) if isinstance(record, dict) else None
        except (ValueError, KeyError, TypeError):
            unplaced += 1
            continue
        found = _record(prepared)
        if found is None:
            unplaced += 1
            continue
        records.append(found)
    ids, missed = place(session_file, records)
    return Queued(ids, unplaced + missed, path)
