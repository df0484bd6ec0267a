"""Never double what the live extension already retained.

Before a session is planned, the server is asked what the live extension retained for it in the session's project
bank: hindsight-pi's documents tagged ``session:<id>`` with ``store_method:auto`` or ``store_method:tool`` (this
tool's own are ``store_method:import``), and pi-hindsight's document ``pi-session:<sha256(session file)[:16]>``.
``--live-retained`` says what then happens:

* ``after`` (default): what the server holds is not sent again. hindsight-pi's documents list what they hold:
  its live document (one line per message it retained) and its backfills (lists of entries with their ids) are
  read, and exactly those entries are left out (hindsight_batch/extension_records.py), so a turn the extension
  lost (a later flush replaced the document) is imported. For pi-hindsight's live document, and a document whose
  text lists nothing: where pi-hindsight's retain cursor names the last message it handled, everything up to
  that message is left out; otherwise everything on the active path up to the last entry whose timestamp is not
  later than the newest ``updated_at`` the server holds for those documents (the time of the last live retain).
* ``skip``: a session with any live retain is not imported at all.
* ``include``: no check; everything is imported (live retains may then be doubled).

A dry run whose server cannot be reached (or refuses the credentials) says, per session, that it could not check,
and plans the whole session (it writes nothing); ``--apply`` never runs without the server.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from hindsight_batch.catchup import CatchUpVerdict, cursor_verdict
from hindsight_batch.config.families import HINDSIGHT_PI, PI_HINDSIGHT
from hindsight_batch.errors import ServerError
from hindsight_batch.extension_records import held_by_text
from hindsight_batch.masking import mask
from hindsight_batch.switches import path_hashes

if TYPE_CHECKING:  # httpx is loaded only when the server is asked (not with --live-retained include)
    from hindsight_batch.rows import LiveNote
    from hindsight_batch.sinks.hindsight import HindsightClient

LIVE_MODES = ("after", "skip", "include")
LIVE_STORE_METHODS = frozenset({"store_method:auto", "store_method:tool"})
BACKFILL_STORE_METHOD = "store_method:import"  # hindsight-pi's own backfill commands (not under pi-import: ids)


class LiveDecision(NamedTuple):
    """What the check found for one session and what is done about it."""

    decision: str  # none | after | skip | include | unchecked
    documents: tuple[str, ...] = ()
    until: str | None = None  # the newest updated_at of the live documents
    cursor: CatchUpVerdict | None = None  # pi-hindsight's retain cursor, where it names a message
    note: str = ""
    held: frozenset[str] = frozenset()  # entries hindsight-pi's backfill documents list

    def as_json(self) -> LiveNote:
        data: LiveNote = {"decision": self.decision, "note": self.note}
        if self.documents:
            data["live_documents"] = list(self.documents)
        if self.until:
            data["live_until"] = self.until
        return data

    def handled(self, catch_up: CatchUpVerdict | None) -> CatchUpVerdict | None:
        """The catch-up verdict with the live cut-off added (what planning leaves out)."""
        if self.decision != "after":
            return catch_up
        base = catch_up or self.cursor or CatchUpVerdict(True)
        if base.handled_id is None and self.cursor is not None:
            base = base._replace(handled_id=self.cursor.handled_id)
        # The time is kept beside a cursor: planning falls back to it when the cursor's entry is not on the path.
        return base._replace(handled_until=self.until, handled_ids=base.handled_ids | self.held)


_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def unreachable(base_url: str, timeout: float = 3.0) -> str | None:
    """Why no TCP connection to the server can even be opened (refused, no such host, no answer in ``timeout``),
    or None. A plain socket, before httpx is loaded: a dry run with no server stays cheap. Not asked behind a
    proxy (httpx would go through it), nor for a URL without a host; None then, and httpx finds out."""
    parts = urllib.parse.urlsplit(base_url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if not parts.hostname or any(os.environ.get(name) for name in _PROXY_VARIABLES):
        return None
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return None
    except OSError as exc:
        return mask(f"no answer from {base_url} ({exc.strerror or type(exc).__name__})")


class LiveCheck:
    """Asks the server once per session; in a dry run, the first failure ends the asking for the run.

    ``probe`` (a dry run's :func:`unreachable`) is asked once, before the HTTP client is made."""

    def __init__(self, mode: str, client: Callable[[], HindsightClient] | None, dry_run: bool,
                 probe: Callable[[], str | None] | None = None) -> None:
        self.mode = mode
        self._probe = probe
        self._factory = client
        self._client: HindsightClient | None = None
        self._dry_run = dry_run
        self.problem: str | None = None  # why nothing could be checked (dry run only)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _live_documents(self, bank_id: str, family: str, session_id: str, session_file: Path) -> list[dict[str, Any]]:
        """The live extension's documents for this session: hindsight-pi's live retains (``store_method:auto`` or
        ``tool``) and its backfills (``store_method:import`` under another id than this tool's ``pi-import:``:
        ``/hindsight:parse-and-upsert-session`` under the session id, ``/hindsight:upsert-historical-sessions``
        under the file's name, tagged ``session:<that name>``; hindsight_batch/extension_records.py), and
        pi-hindsight's live document ``pi-session:<hash>``."""
        if self._client is None and self._factory is not None:
            made = self._factory()
            try:
                made.preflight()  # a 404 from something that is not Hindsight must not read as "retained nothing"
            except BaseException:
                made.close()
                raise
            self._client = made
        client = self._client
        if client is None:
            return []
        stem = session_file.name.removesuffix(".jsonl")
        # A backfill is hindsight-pi's only under the ids its commands give (another tool's import is not one).
        found = [doc for doc in client.documents_tagged(bank_id, f"session:{session_id}")
                 if not str(doc.get("id", "")).startswith("pi-import:")
                 and (LIVE_STORE_METHODS.intersection(doc.get("tags") or [])
                      or (doc.get("id") in (session_id, stem) and BACKFILL_STORE_METHOD in (doc.get("tags") or [])))]
        # (A file name that is not UTF-8 names no document: hindsight-pi's own JSON could not have sent it.)
        if family != PI_HINDSIGHT and stem != session_id and all(doc.get("id") != stem for doc in found) \
                and stem.encode("utf-8", "replace").decode("utf-8") == stem:
            historical = client.document(bank_id, stem)  # upsert-historical-sessions: named after the file
            if historical is not None and BACKFILL_STORE_METHOD in (historical.get("tags") or []):
                found.append(historical)
        if family != HINDSIGHT_PI:  # under each spelling of the session's path (pi's own first)
            for digest in path_hashes(session_file):
                doc = client.document(bank_id, f"pi-session:{digest}")
                if doc is not None:
                    found.append(doc)
        return found

    def _held(self, bank_id: str, session_id: str, session_file: Path, docs: list[dict[str, Any]]
              ) -> tuple[frozenset[str], list[dict[str, Any]], list[str]]:
        """What hindsight-pi's documents of this session hold, read from their text
        (:func:`~hindsight_batch.extension_records.held_by_text`): its live document (under the session's id,
        ``store_method:auto``) and its backfills. Returns the entry ids they hold, the documents whose text lists
        nothing (the server keeps no text, or another shape): those are placed by time instead, and notes (live
        records that match no entry)."""
        ids: set[str] = set()
        unread: list[dict[str, Any]] = []
        notes: list[str] = []
        for doc in docs:
            name = str(doc.get("id", ""))
            if name.startswith("pi-session:"):  # pi-hindsight's: its cursor or time places it
                continue
            text = doc.get("original_text")
            if text is None and self._client is not None:
                full = self._client.document(bank_id, name)
                text = full.get("original_text") if full else None
            held = held_by_text(text if isinstance(text, str) else None, session_file)
            ids |= held.ids
            if not held.records:
                unread.append(doc)
            elif held.unplaced:
                notes.append(f"{held.unplaced} of the {held.records} records in {name} match no entry of the "
                             "session (imported, if kept)")
        return frozenset(ids), unread, notes

    def decide(self, bank_id: str, family: str, session_id: str, session_file: Path, cwd: str | None) -> LiveDecision:
        if self.mode == "include":
            return LiveDecision("include", note="not checked (--live-retained include)")
        if self._probe is not None and self._client is None:
            self.problem, self._probe = self._probe(), None
        if self.problem is not None:
            return LiveDecision("unchecked", note=f"could not check live retains: {self.problem}")
        from hindsight_batch.sinks.hindsight import RequestRejected

        try:
            docs = self._live_documents(bank_id, family, session_id, session_file)
        except (ServerError, RequestRejected) as exc:
            if not self._dry_run:
                if isinstance(exc, ServerError):
                    raise
                raise ServerError(f"could not ask the server what was retained live: {exc}") from None
            self.problem = str(exc)
            return LiveDecision("unchecked", note=f"could not check live retains: {self.problem}")
        if not docs:
            return LiveDecision("none", note="the live extension retained nothing of this session in this bank")
        ids = tuple(sorted(str(doc.get("id")) for doc in docs))
        if self.mode == "skip":
            return LiveDecision("skip", ids, None, note="the live extension retained this session (--live-retained "
                                                        "skip)")
        # What hindsight-pi's documents hold is read from their text and left out by entry; a document whose text
        # lists nothing, and pi-hindsight's live document, are placed by its cursor or by time.
        held, live_docs, notes = self._held(bank_id, session_id, session_file, docs)
        live_docs += [doc for doc in docs if str(doc.get("id", "")).startswith("pi-session:")]
        stamps = [str(doc.get("updated_at") or doc.get("created_at") or "") for doc in live_docs]
        until = max((s for s in stamps if s), default=None)
        cursor = None
        if family != HINDSIGHT_PI and cwd:
            found = cursor_verdict(cwd, session_file)
            if found.handled_id is not None:
                cursor = found
        if held:
            kinds = " and ".join(sorted({"backfill" if BACKFILL_STORE_METHOD in (d.get("tags") or []) else "live"
                                         for d in docs if not str(d.get("id", "")).startswith("pi-session:")}))
            notes.insert(0, f"leaving out the {len(held)} entries hindsight-pi's {kinds} document(s) hold, by their "
                            "text")
        if not live_docs:
            pass
        elif cursor is not None:
            notes.append("importing only what came after the extension's retain cursor")
        elif until is None:
            return LiveDecision("skip", ids, None, note="live retains without a time; skipped (fail closed)")
        else:
            notes.append(f"importing only entries after the last live retain ({until})")
        return LiveDecision("after", ids, until, cursor, "; ".join(notes), held)
