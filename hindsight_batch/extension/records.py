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

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.fsutil import read_regular
from hindsight_batch.config.families import home_of
from hindsight_batch.session.scan import message_entries


def backfill_ids(text: str | None) -> frozenset[str]:
    """The entry ids listed by hindsight-pi's backfill content (each line of the document's text that is a JSON
    list of records with a string ``id``), or by pi-hindsight's own import (:func:`luxus_import_ids`)."""
    found: set[str] = set(luxus_import_ids(text))
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


def luxus_import_ids(text: str | None) -> frozenset[str]:
    """The entry ids a pi-hindsight import document lists: its content is ``JSON.stringify({source:
    "pi-session-import", sessionFile, cwd, sessionId, branchLeafId, …, messages}, null, 2)`` with each message's
    ``id`` kept (pi-hindsight extensions/imports/import-sessions.ts ``buildImportBranch``); its id
    ``pi-import:<session>:leaf:<leaf>…``, tags ``import:historical``, ``imported:true``."""
    if not text or not text.lstrip().startswith("{"):
        return frozenset()
    try:
        data = jsoncodec.loads(text)
    except ValueError:
        return frozenset()
    if not isinstance(data, dict) or data.get("source") != "pi-session-import" or not isinstance(
            data.get("messages"), list):
        return frozenset()
    return frozenset(m["id"] for m in data["messages"] if isinstance(m, dict) and isinstance(m.get("id"), str))


def queue_path(session_id: str, env: Mapping[str, str], kind: str = "auto") -> Path:
    """hindsight-pi extensions/queue.ts ``queuePath(sessionId, kind)`` (``auto`` or ``tool``)."""
    root = Path(env.get("HINDSIGHT_QUEUE_ROOT") or Path(home_of(env)) / ".hindsight" / "pi-queues")
    safe = re.sub(r"[^a-zA-Z0-9_.-]+", "-", session_id)[:120] or "default"
    return root / f"{safe}.{kind}.jsonl"


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


Record = tuple[tuple[str, tuple[str, ...]], float | None]  # (role and texts, time) of a prepared message


def prepared_record(value: Any) -> Record | None:
    """A ``prepareRetainEntry`` result (``{"message": {...}, "timestamp": ISO}``) as a record to match, or None."""
    if not isinstance(value, dict) or (key := _key(value.get("message"))) is None:
        return None
    return key, _seconds(value.get("timestamp"))


def live_text_records(text: str | None) -> list[Record] | None:
    """The messages a hindsight-pi session document's text holds: one ``JSON.stringify(prepareRetainEntry(…))``
    line per live retain (extensions/index.ts ``message_end``, flushed with ``retainBatch``; the server joins
    appended items with ``\\n``), or a backfill's list of records (read by :func:`backfill_ids`, skipped here).
    None when any line is neither: the text is not one this can read, so it is placed by time instead."""
    if not text:
        return None
    records: list[Record] = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            value = jsoncodec.loads(line)
        except ValueError:
            return None
        if isinstance(value, list):
            continue  # a backfill (backfill_ids)
        record = prepared_record(value)
        if record is None:
            return None
        records.append(record)
    return records


# A record and its entry are written within milliseconds of each other (extensions/index.ts message_end, then pi's
# append): a record whose text no entry has (hindsight-pi's sanitizeCredentials rewrote it) is placed by its role
# and time, when an entry of that role lies this close (seconds) and no record took it.
SAME_MOMENT = 2.0


def match_records(session_file: Path, records: list[Record]) -> tuple[frozenset[str], int]:
    """The message entries of the file that ``records`` hold, by role and text (the nearest in time when several
    match, each entry once), then by role and time alone for a record whose text no entry has (:data:`SAME_MOMENT`);
    and how many records matched none."""
    entries: dict[tuple[str, tuple[str, ...]], list[tuple[str, float | None]]] = {}
    by_role: dict[str, list[tuple[str, float]]] = {}
    wanted = {key for key, _ in records}
    try:
        for entry in message_entries(session_file):
            key = _key(entry.get("message"))
            if key is None:
                continue
            when = _seconds(entry.get("timestamp"))
            if key in wanted:
                entries.setdefault(key, []).append((entry["id"], when))
            if when is not None:
                by_role.setdefault(key[0], []).append((entry["id"], when))
    except OSError:
        return frozenset(), len(records)
    found: set[str] = set()
    left: list[Record] = []
    for key, when in records:
        candidates = [c for c in entries.get(key, []) if c[0] not in found]
        if not candidates:
            left.append((key, when))
            continue
        best = min(candidates, key=lambda c: abs(c[1] - when) if when is not None and c[1] is not None else 0.0)
        found.add(best[0])
    unplaced = 0
    for (role, _), when in left:
        near = [c for c in by_role.get(role, []) if c[0] not in found and when is not None
                and abs(c[1] - when) <= SAME_MOMENT]
        if not near:
            unplaced += 1
            continue
        found.add(min(near, key=lambda c: abs(c[1] - (when or 0.0)))[0])
    return frozenset(found), unplaced


def queued_ids(session_file: Path, session_id: str, env: Mapping[str, str]) -> Queued | None:
    """The entries whose messages wait in hindsight-pi's queue for this session; None when it has no queue."""
    path = queue_path(session_id, env)
    try:
        raw = read_regular(path)  # a FIFO put where the queue was must not block the run
    except OSError:
        return None
    records: list[Record] = []
    unplaced = 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = jsoncodec.loads(line)
            prepared = prepared_record(jsoncodec.loads(record["content"]) if isinstance(record, dict) else None)
        except (ValueError, KeyError, TypeError):
            prepared = None
        if prepared is None:
            unplaced += 1
            continue
        records.append(prepared)
    if not records:
        return Queued(frozenset(), unplaced, path)
    found, missed = match_records(session_file, records)
    return Queued(found, unplaced + missed, path)
