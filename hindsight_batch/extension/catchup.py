"""What the live extension already handled: pi-hindsight's retain cursor, matched by content.

Catch-up acts as automatic retain: messages at or before pi-hindsight's retain cursor were retained live or
deliberately skipped (a mode, ``/hindsight:next-opt-out``) and are never sent again. The cursor is read as the
extension writes it (pi-hindsight extensions/lifecycle/retain-cursor.ts):

* ``<cwd>/.pi/hindsight/retain-cursors.json``, ``sessions`` keyed by ``stableSessionId`` (sha256 of the session
  path as pi spells it, first 16; :func:`hindsight_batch.extension.switches.path_hashes` gives every spelling);
* version 3 (``buildCursor``): ``index``, ``tailStart``, ``messageIds``, ``fingerprints``; version 2 (migrated by
  ``migrateCursorToV3``) has no ``tailStart``; version 1 and ``legacyFingerprints`` entries hold fingerprints only.

The cursor is built over ``agent_end``'s messages, which pi 0.73.1 gives without ids: ``messageIds`` are ``""`` and
``index`` counts within the last agent run, so neither names an entry of the file. What does is the content:
``messageFingerprint`` is ``sha256(JSON.stringify({id, role, timestamp, content, toolName, isError, model,
stopReason}))`` of the message, and the session file holds each message as pi wrote it. The last message on the
file whose fingerprint is one of the cursor's is the last one handled. A cursor that cannot be used (unreadable,
another shape, no fingerprint found) never skips the session: the check falls back (the live check's time rule, or
the whole session) and says so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.fsutil import read_regular
from hindsight_batch.extension.switches import path_hashes
from hindsight_batch.session.scan import message_entries

# messageFingerprint's object, in its key order (JSON.stringify leaves out a key whose value is undefined).
_FINGERPRINT_KEYS = ("id", "role", "timestamp", "content", "toolName", "isError", "model", "stopReason")


class CatchUpVerdict(NamedTuple):
    retain: bool
    reason: str | None = None  # why the session is skipped
    handled_id: str | None = None  # the entry of the last message the live extension handled (found by content)
    handled_until: str | None = None  # or (live-retained check) the time of the last live retain
    note: str | None = None  # how the cursor was used, when it could not be used as it is (a fallback)
    switched_off: frozenset[str] = frozenset()  # message entries hindsight-pi's hindsight-meta kept out
    handled_ids: frozenset[str] = frozenset()  # entries the extension holds already (backfill, queue), by content


def _folder(cwd: str) -> Path:
    return Path(cwd) / ".pi" / "hindsight"


def fingerprint(message: Mapping[str, Any]) -> str | None:
    """pi-hindsight retain-cursor.ts ``messageFingerprint`` of a message as the session file holds it: the same
    keys in the same order, serialised as ``JSON.stringify`` does (no spaces, non-ASCII as it is). None when the
    message holds something JSON.stringify would write otherwise (a float, a lone surrogate)."""
    stable = {key: message[key] for key in _FINGERPRINT_KEYS if key in message}
    try:
        text = json.dumps(stable, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                          default=_refuse)
        if _has_float(stable):
            return None
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
    except (ValueError, TypeError, UnicodeEncodeError):
        return None


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def _has_float(value: Any) -> bool:
    """Whether ``value`` holds a number Python would write otherwise than ``JSON.stringify``: both write the
    shortest round-trip digits, but their exponent forms differ (``1e-07`` against ``1e-7``, and the ranges where
    each switches to them). A file JavaScript wrote never holds ``2.0`` (it writes ``2``, read back as an int)."""
    if isinstance(value, float):
        return "e" in repr(value) or value != value or value in (float("inf"), float("-inf"))
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


class Cursor(NamedTuple):
    """The retain cursor of one session: its fingerprints, or why it cannot be used. Both None: no cursor."""

    fingerprints: frozenset[str] | None = None
    problem: str | None = None


def read_cursor(cwd: str, session_file: Path, env: Mapping[str, str] | None = None) -> Cursor:
    """The session's entry in ``retain-cursors.json`` under any spelling of its path (pi's first), as
    ``readRetainCursorStore`` reads the file (versions 1, 2 and 3)."""
    path = _folder(cwd) / "retain-cursors.json"
    try:
        data = jsoncodec.loads(read_regular(path))
    except FileNotFoundError:
        return Cursor()
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not JSON"
        return Cursor(problem=f"retain cursor file {path} cannot be read ({why})")
    if not isinstance(data, dict) or not isinstance(data.get("sessions"), dict):
        return Cursor(problem=f"retain cursor file {path} has no sessions object")
    sessions = data["sessions"]
    entry = next((sessions[h] for h in path_hashes(session_file, env) if h in sessions), None)
    if entry is None:
        return Cursor()
    if isinstance(entry, list):  # version 1: the session's fingerprints (readLegacyStore)
        prints = entry
    elif isinstance(entry, dict) and isinstance(entry.get("fingerprints"), list):
        prints = entry["fingerprints"]  # versions 2 and 3 (never messageIds: "" in pi 0.73.1, not entry ids)
    elif isinstance(entry, dict) and isinstance(entry.get("legacyFingerprints"), list):
        prints = entry["legacyFingerprints"]
    else:
        return Cursor(problem="the retain cursor of this session has no fingerprints")
    found = frozenset(p for p in prints if isinstance(p, str) and p)
    if not found:
        return Cursor(problem="the retain cursor of this session has no fingerprints")
    return Cursor(found)


def last_handled(session_file: Path, fingerprints: frozenset[str]) -> str | None:
    """The id of the last message entry of the file whose fingerprint is one of ``fingerprints``, or None."""
    last: str | None = None
    try:
        for entry in message_entries(session_file):
            message = entry.get("message")
            if isinstance(message, dict) and fingerprint(message) in fingerprints:
                last = entry["id"]
    except OSError:
        return None
    return last


def cursor_verdict(cwd: str | None, session_file: Path, env: Mapping[str, str] | None = None) -> CatchUpVerdict:
    """What pi-hindsight's retain cursor says was handled: the entry it reaches, or (never a skip) a note on why
    it could not be used."""
    if not cwd:
        return CatchUpVerdict(True)
    cursor = read_cursor(cwd, session_file, env)
    if cursor.problem is not None:
        return CatchUpVerdict(True, note=f"{cursor.problem}: not used")
    if cursor.fingerprints is None:
        return CatchUpVerdict(True)
    handled = last_handled(session_file, cursor.fingerprints)
    if handled is None:
        return CatchUpVerdict(True, note="the retain cursor matches no message of this session by content: not "
                                         "used")
    return CatchUpVerdict(True, handled_id=handled)
