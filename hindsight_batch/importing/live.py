"""Never double what the live extension already retained.

Before a session is planned, the server is asked what the live extension retained for it in the session's project
bank: hindsight-pi's documents tagged ``session:<id>`` with ``store_method:auto`` or ``store_method:tool`` (this
tool's own are ``store_method:import`` under ``pi-import:`` ids), hindsight-pi's own backfills (under the session id
or the file's name, ``store_method:import``), pi-hindsight's own import documents (``pi-import:…:leaf:…``,
``imported:true``) and pi-hindsight's live document ``pi-session:<sha256(session file)[:16]>`` (under each spelling
of the path). ``--live-retained`` says what then happens:

* ``after`` (default): only what the server does not hold is imported. A document whose text says which entries it
  holds is matched by content (hindsight_batch/extension/records.py): hindsight-pi's session document (one prepared
  message per line), its backfills and pi-hindsight's imports (the entry ids they list); so a turn a later flush
  replaced away is imported again. The others (pi-hindsight's live document, a text that cannot be read so) are
  placed by pi-hindsight's retain cursor (hindsight_batch/extension/catchup.py), else up to the last entry on the
  active path whose timestamp is not later than the newest ``updated_at`` the server holds for them (the last live
  retain).
* ``skip``: a session with any live retain is not imported at all.
* ``include``: no check; everything is imported (live retains may then be doubled).

A dry run whose server cannot be reached (or refuses the credentials) says, per session, that it could not check,
and plans the whole session (it writes nothing); ``--apply`` never runs without the server.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from hindsight_batch.base.masking import mask
from hindsight_batch.config.families import HINDSIGHT_PI, PI_HINDSIGHT
from hindsight_batch.errors import ServerError
from hindsight_batch.extension.catchup import CatchUpVerdict, cursor_verdict
from hindsight_batch.extension.records import backfill_ids, live_text_records, match_records
from hindsight_batch.extension.switches import path_hashes

if TYPE_CHECKING:  # httpx is loaded only when the server is asked (not with --live-retained include)
    from hindsight_batch.plan.rows import LiveNote
    from hindsight_batch.sinks.hindsight import HindsightClient

LIVE_MODES = ("after", "skip", "include")
LIVE_STORE_METHODS = frozenset({"store_method:auto", "store_method:tool"})
BACKFILL_STORE_METHOD = "store_method:import"  # hindsight-pi's own backfill commands (not under pi-import: ids)
LUXUS_IMPORT_TAG = "imported:true"  # pi-hindsight's own import documents


def _theirs(doc: dict[str, Any], session_id: str, stem: str) -> bool:
    """A document the live extension (or its own backfill or import command) wrote for this session, not this
    tool's (``pi-import:<session>:<role>:<segment>:w…``, ``store_method:import``)."""
    name, tags = str(doc.get("id", "")), doc.get("tags") or []
    if name.startswith("pi-import:"):
        return LUXUS_IMPORT_TAG in tags  # pi-hindsight's own import (extension/records.luxus_import_ids)
    # A backfill is hindsight-pi's only under the ids its commands give (another tool's import is not one).
    return bool(LIVE_STORE_METHODS.intersection(tags)) or (name in (session_id, stem) and BACKFILL_STORE_METHOD in tags)


class LiveDecision(NamedTuple):
    """What the check found for one session and what is done about it."""

    decision: str  # none | after | skip | include | unchecked
    documents: tuple[str, ...] = ()
    until: str | None = None  # the newest updated_at of the live documents
    cursor: CatchUpVerdict | None = None  # pi-hindsight's retain cursor, where it names a message
    note: str = ""
    held: frozenset[str] = frozenset()  # entries the documents hold, by content (left out by id)

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
                 probe: Callable[[], str | None] | None = None, env: Mapping[str, str] | None = None) -> None:
        self.mode = mode
        self._env = env  # the run's environment: HOME spells the session path pi-hindsight hashes
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
        under the file's name, tagged ``session:<that name>``; hindsight_batch/extension/records.py), and
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
        found = [doc for doc in client.documents_tagged(bank_id, f"session:{session_id}")
                 if _theirs(doc, session_id, stem)]
        # (A file name that is not UTF-8 names no document: hindsight-pi's own JSON could not have sent it.)
        if family != PI_HINDSIGHT and stem != session_id and all(doc.get("id") != stem for doc in found) \
                and stem.encode("utf-8", "replace").decode("utf-8") == stem:
            historical = client.document(bank_id, stem)  # upsert-historical-sessions: named after the file
            if historical is not None and BACKFILL_STORE_METHOD in (historical.get("tags") or []):
                found.append(historical)
        if family != HINDSIGHT_PI:  # under each spelling of the session's path (pi's own first)
            for digest in path_hashes(session_file, self._env):
                doc = client.document(bank_id, f"pi-session:{digest}")
                if doc is not None:
                    found.append(doc)
        return found

    def _by_content(self, bank_id: str, session_id: str, stem: str, session_file: Path,
                    docs: list[dict[str, Any]]) -> tuple[frozenset[str], int, list[dict[str, Any]]]:
        """What hindsight-pi's documents hold, read from their text (hindsight_batch/extension/records.py): the
        entry ids a backfill lists, and the entries its live retains hold (each line a prepared message, matched by
        role and text). Returns those ids, how many retained messages match no entry, and the documents whose text
        cannot be read that way (no text kept, another shape): those are placed by time instead (fail closed)."""
        ids: set[str] = set()
        unplaced = 0
        by_time: list[dict[str, Any]] = []
        for doc in docs:
            name = str(doc.get("id", ""))
            if name.startswith("pi-session:"):  # pi-hindsight's live document: its retain cursor places it, else time
                by_time.append(doc)
                continue
            text = doc.get("original_text")
            if text is None and self._client is not None:
                full = self._client.document(bank_id, name)
                text = full.get("original_text") if full else None
            text = text if isinstance(text, str) else None
            listed = backfill_ids(text)
            records = live_text_records(text)
            if records is None:
                if not listed:
                    by_time.append(doc)
                ids |= listed
                continue
            found, missed = match_records(session_file, records) if records else (frozenset(), 0)
            ids |= listed | found
            unplaced += missed
        return frozenset(ids), unplaced, by_time

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
        # What the server holds is matched by content where its text says which entries it holds (hindsight-pi's
        # documents); the rest (pi-hindsight's document, a text that cannot be read) is placed by pi-hindsight's
        # retain cursor, else by the time of the last live retain.
        held, unplaced, live_docs = self._by_content(bank_id, session_id, session_file.name.removesuffix(".jsonl"),
                                                     session_file, docs)
        stamps = [str(doc.get("updated_at") or doc.get("created_at") or "") for doc in live_docs]
        until = max((s for s in stamps if s), default=None)
        cursor = None
        if family != HINDSIGHT_PI and cwd:
            found = cursor_verdict(cwd, session_file, self._env)
            if found.handled_id is not None:
                cursor = found
        notes = []
        if held:
            notes.append(f"leaving out the {len(held)} entries the extension's documents hold (matched by content)")
        if unplaced:
            notes.append(f"{unplaced} message(s) they hold match no entry of the file")
        if live_docs and cursor is not None:
            notes.append("importing only what came after the extension's retain cursor")
        elif live_docs and until is None:
            return LiveDecision("skip", ids, None, note="live retains without a time; skipped (fail closed)")
        elif live_docs:
            notes.append(f"importing only entries after the last live retain ({until})")
        return LiveDecision("after", ids, until, cursor, "; ".join(notes), held)
