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


def _key(message: Any) -> tuple[str, tuple[str, ...]] | None:
    """A message's role and the text of its text blocks (a string content is one text)."""
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return message["role"], (content,)
    if isinstance(content, list):
        texts = tuple(b["text"] for b in content
                      if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
        return message["role"], texts
    return None


def _seconds(stamp: Any) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def queued_ids(session_file: Path, session_id: str, env: Mapping[str, str]) -> Queued | None:
    """The entries whose messages wait in hindsight-pi's queue for this session; None when it has no queue."""
    path = queue_path(session_id, env)
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    records: list[tuple[tuple[str, tuple[str, ...]], float | None]] = []
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
        if not isinstance(prepared, dict) or (key := _key(prepared.get("message"))) is None:
            unplaced += 1
            continue
        records.append((key, _seconds(prepared.get("timestamp"))))
    if not records:
        return Queued(frozenset(), unplaced, path)
    entries: dict[tuple[str, tuple[str, ...]], list[tuple[str, float | None]]] = {}
    try:
        data = session_file.read_bytes()
    except OSError:
        return Queued(frozenset(), unplaced + len(records), path)
    for line in data.split(b"\n"):
        if b'"message"' not in line:
            continue
        try:
            entry = jsoncodec.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") != "message" or not isinstance(entry.get("id"), str):
            continue
        key = _key(entry.get("message"))
        if key is not None:
            entries.setdefault(key, []).append((entry["id"], _seconds(entry.get("timestamp"))))
    found: set[str] = set()
    for key, when in records:
        candidates = [c for c in entries.get(key, []) if c[0] not in found]
        if not candidates:
            unplaced += 1
            continue
        best = min(candidates, key=lambda c: abs((c[1] or 0.0) - (when or 0.0)) if when and c[1] else 0.0)
        found.add(best[0])
    return Queued(frozenset(found), unplaced, path)
