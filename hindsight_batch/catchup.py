"""What a scheduled catch-up may retain: session memory modes and the live extension's retain cursor.

Unlike a deliberate import (which, as the seeds say, ignores session modes), catch-up acts as automatic retain:

* session metadata ``<cwd>/.pi/hindsight/session-meta/<sha256(session file path)[:16]>.json``: a missing file
  means ``normal``; ``mode`` ``read-only`` or ``ignored``, or ``retainMode`` ``off``, means the session is not
  retained; a file that cannot be read or parsed counts as ``ignored`` (S8, fail closed);
* the retain cursor ``<cwd>/.pi/hindsight/retain-cursors.json`` (version 3, ``sessions`` keyed by the same hash):
  the messages at or before it were retained live or deliberately skipped (a mode, ``/hindsight:next-opt-out``)
  and are never sent by catch-up. The cursor's last ``messageIds`` entry names the last handled message; without
  ids, ``index`` counts the messages on the active path from 0. A cursor file that cannot be read, or is not
  version 3, skips the session with a warning (fail closed).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, NamedTuple

from hindsight_batch import jsoncodec
from hindsight_batch.session.names import node_path


def path_hash(session_file: Path) -> str:
    return hashlib.sha256(node_path(session_file.resolve()).encode("utf-8")).hexdigest()[:16]


def _folder(cwd: str) -> Path:
    return Path(cwd) / ".pi" / "hindsight"


class CatchUpVerdict(NamedTuple):
    retain: bool
    reason: str | None = None  # why the session is skipped
    handled_id: str | None = None  # the last message the live extension handled
    handled_index: int | None = None  # or its position among the path's messages
    handled_until: str | None = None  # or (live-retained check) the time of the last live retain


def _read_json(path: Path) -> Any:
    """The extension's JSON file; whatever it holds, a failure to read it is an OSError or a ValueError."""
    return jsoncodec.loads(path.read_bytes())


def session_mode(cwd: str, session_file: Path) -> str:
    path = _folder(cwd) / "session-meta" / f"{path_hash(session_file)}.json"
    if not path.exists():
        return "normal"
    try:
        meta = _read_json(path)
    except (OSError, ValueError):
        return "ignored"
    if not isinstance(meta, dict):
        return "ignored"
    mode = meta.get("mode", "normal")
    if mode not in ("normal", "read-only", "ignored"):
        return "ignored"  # an unknown mode never widens what is retained
    if mode == "normal" and meta.get("retainMode") in ("off", False):
        return "retain-off"
    return str(mode)


def verdict(cwd: str | None, session_file: Path) -> CatchUpVerdict:
    if not cwd:
        return CatchUpVerdict(False, "no cwd in the session header")
    mode = session_mode(cwd, session_file)
    if mode != "normal":
        return CatchUpVerdict(False, f"session mode {mode}")
    cursors = _folder(cwd) / "retain-cursors.json"
    if not cursors.exists():
        return CatchUpVerdict(True)
    try:
        data = _read_json(cursors)
    except (OSError, ValueError):
        return CatchUpVerdict(False, f"unreadable retain cursor file {cursors}")
    if not isinstance(data, dict) or data.get("version") != 3 or not isinstance(data.get("sessions"), dict):
        return CatchUpVerdict(False, f"retain cursor file {cursors} is not version 3")
    cursor = data["sessions"].get(path_hash(session_file))
    if cursor is None:
        return CatchUpVerdict(True)
    if not isinstance(cursor, dict):
        return CatchUpVerdict(False, "unreadable retain cursor for this session")
    ids = cursor.get("messageIds")
    if isinstance(ids, list) and ids and isinstance(ids[-1], str):
        return CatchUpVerdict(True, handled_id=ids[-1])
    index = cursor.get("index")
    if isinstance(index, int) and not isinstance(index, bool):
        return CatchUpVerdict(True, handled_index=index)
    return CatchUpVerdict(False, "unreadable retain cursor for this session")
