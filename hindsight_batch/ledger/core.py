"""The ledger: a DuckDB file with runs, sources, documents and manifest rows.

It makes re-runs cheap (an unchanged source is not parsed again), uploads resumable (each document's status and
operation id), and ``report`` possible; plain SQL over the file works too (one column per manifest field). One
writer at a time: the ledger holds an exclusive lock file for as long as it is open, and a second run gets
:class:`BusyError` (exit 75) at once. Opening a ledger made by an older version migrates it
(:mod:`hindsight_batch.ledger.schema`); one made by a newer version is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from hindsight_batch.base.fsutil import PRIVATE_FILE, open_private, private_dir, private_umask, replace_file, write_all
from hindsight_batch.errors import BusyError, UsageError, out_of_room
from hindsight_batch.ledger import manifest_table
from hindsight_batch.ledger import schema as ledger_schema
from hindsight_batch.ledger.engine import duckdb
from hindsight_batch.ledger.latest_rows import LatestRows
from hindsight_batch.redaction.messages import failure_reason

if TYPE_CHECKING:
    from hindsight_batch.plan.rows import ManifestRow, SourceRecord

_BATCH = 400
_COLUMN_BATCH = 5000
LOAD_ROWS = 2000  # manifest records loaded at once (:meth:`Ledger.add_manifest_records`)
# What a re-run does not send again while the item is unchanged: on the server (sent, not yet known missing, or
# confirmed there with our content hash), or refused for good (a 4xx about the item itself). Everything else --
# pending, missing, failed with a retryable error, forgotten, deleted as stale -- is sent again.
SETTLED = ("sent", "confirmed", "failed")


def default_state_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "state")
    return Path(base) / "hindsight-batch"


class SourceState(NamedTuple):
    size: int
    mtime_ns: int
    settings_hash: str
    last_run_id: str
    sha256: str | None = None  # of the file's bytes when last read (None: recorded before hashes were kept)
    header: str | None = None  # its session header (session.model.header_text; None: recorded before it was kept)


class ReviewedSource(NamedTuple):
    """What a dry run saw of one source it planned or reused (table ``run_sources``): ``import --apply
    --from-run`` sends its items only while the file and the settings are still exactly these."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    settings_hash: str
    rows_run_id: str  # the run whose manifest rows hold this source's plan (an earlier one for a reused source)


# A reviewed item: what must be sent again, exactly (document id, item hash, bank).
class ReviewedItem(NamedTuple):
    """One item a dry run planned, as ``--from-run`` compares it with the plan made again."""

    document_id: str
    item_sha256: str
    bank_id: str


class DocumentRow(NamedTuple):
    bank_id: str
    document_id: str
    bank_role: str
    source_path: str
    session_id: str
    content_hash: str
    item_hash: str
    tags: list[str]
    metadata: dict[str, str]
    status: str = "pending"
    operation_id: str | None = None


_DOCUMENT_COLUMNS = ("bank_id, document_id, bank_role, source_path, session_id, content_hash, item_hash, tags, "
                     "metadata, status, operation_id")


def _document_row(r: tuple[Any, ...]) -> DocumentRow:
    return DocumentRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7] or "[]"), json.loads(r[8] or "{}"),
                       r[9], r[10])


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and those of its parents that do not exist yet, deepest first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


class LedgerPathError(UsageError):
    """The state folder cannot be created or written (exit 2; the CLI makes it 3 when the folder came from the
    environment rather than ``--state``)."""


class LedgerVersionError(LedgerPathError):
    """The ledger was made by a newer version (its schema version is higher than this code reads), or its version
    cannot be read: refused untouched, with the same exit code as a ledger that cannot be opened."""


class RunRow(NamedTuple):
    run_id: str
    command: str
    mode: str
    started_at: datetime | None
    finished_at: datetime | None
    status: str


class ManifestCounts(NamedTuple):
    """One run's manifest rows counted: each chunk once (its first row), except ``banks`` (every row with a bank).
    Each list is most first, ties in the order first written, as ``collections.Counter.most_common`` orders."""

    chunks: int
    routes: list[tuple[str, int]]
    banks: list[tuple[str, int]]
    redactions: list[tuple[str, int]]
    # (skip_reason, reason, chunks) of skipped chunks, by group in the order first written; skip_reason is None
    # on rows written before it existed (schema version 1).
    skips: list[tuple[str | None, str, int]]


# A run's manifest rows with their write order (``r``), and each chunk's first row.
# A run's manifest rows (``m``; the run's id is the query's parameter $1): those it wrote, and for each source a
# dry run reused unchanged, the rows of the run that read it (they stay under that run): what ``report``, the review
# page and ``import --apply --from-run`` (reviewed_items) all take as the run's plan.
RUN_ROWS_FILTER = ("(m.run_id = $1 OR EXISTS (SELECT 1 FROM run_sources s WHERE s.run_id = $1 "
                   "AND s.rows_run_id = m.run_id AND s.path = m.source_file))")
_RUN_ROWS = (f"WITH run_rows AS (SELECT rowid AS r, * FROM manifest m WHERE {RUN_ROWS_FILTER}), "
             "chunks AS (SELECT * FROM run_rows QUALIFY row_number() OVER "
             "(PARTITION BY source_file, segment, chunk_index ORDER BY r) = 1) ")


class Ledger:
    def __init__(self, state_dir: Path, read_only: bool = False) -> None:
        """The ledger in ``state_dir``, created if need be and locked for this run. ``read_only`` (``report``):
        an existing ledger, opened for reading, in a folder that may not be writable; it waits for no lock
        (DuckDB itself refuses to read a ledger another process is writing) and changes nothing."""
        self.path = state_dir / "ledger.duckdb"
        self._types: dict[str, list[str]] = {}  # column types by table, for _insert
        self._latest: LatestRows | None = None  # what latest_rows reads from (expect_reuse)
        self.read_only = read_only
        created = [] if read_only else _missing_folders(state_dir)
        lock_path = state_dir / "ledger.lock"
        lock_existed = lock_path.exists()
        self._lock: IO[str] | None = None
        try:
            if not read_only:
                private_dir(state_dir)
                self._lock = open_private(lock_path, "a")
            elif lock_existed:
                self._lock = open(lock_path)  # noqa: SIM115 (closed by _unlock)
        except OSError as exc:
            self._undo(created, lock_path, lock_existed)
            problem = exc.strerror or type(exc).__name__
            raise LedgerPathError(f"state folder {state_dir}: cannot create or write it: {problem}") from None
        try:
            if self._lock is not None:  # (read-only: shared, refused only while a run holds it)
                fcntl.flock(self._lock.fileno(), (fcntl.LOCK_SH if read_only else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            self._unlock()
            message = f"another hindsight-batch run is using the ledger in {state_dir}; try again later"
            raise BusyError(message) from None
        # DuckDB creates the file and re-creates its .wal at every checkpoint itself: a private umask for as long
        # as the ledger is open makes them 0600 (chmod covers a ledger an older version left readable).
        self._umask = contextlib.ExitStack()
        self._umask.enter_context(private_umask())
        try:
            # The ledger's statements are small: one thread runs them as fast, holds less memory, starts no pool.
            self.db = duckdb.connect(str(self.path), read_only=read_only, config={"threads": 1})
        except (OSError, duckdb.Error) as exc:
            self._umask.close()
            self._unlock()
            self._undo(created, lock_path, lock_existed)
            raise LedgerPathError(f"ledger {self.path}: cannot open it: {' '.join(str(exc).split())[:300]}") from None
        except BaseException:
            self._umask.close()
            self._unlock()
            raise
        try:
            version = self._check_version()
            if read_only:
                if version != ledger_schema.SCHEMA_VERSION:
                    raise LedgerPathError(f"ledger {self.path}: schema version {version} is older than this "
                                          "hindsight-batch reads; open it once where it can be written (any "
                                          "command) to bring it up to date")
                return
            os.chmod(self.path, PRIVATE_FILE)
            self._migrate(version)
            # We hold the lock, so a run still marked running is one whose process died (SIGKILL, power loss).
            self.db.execute("UPDATE runs SET status = 'interrupted' WHERE status = 'running'")
        except (OSError, duckdb.Error) as exc:
            self._close_db()
            self._undo(created, lock_path, lock_existed)
            raise LedgerPathError(f"ledger {self.path}: cannot open it: {' '.join(str(exc).split())[:300]}") from None
        except BaseException:
            self._close_db()
            raise

    def _check_version(self) -> int | None:
        """The ledger's schema version (None: a new file); a ledger whose schema this code does not know (a newer
        version made it) is refused, untouched."""
        try:
            version = ledger_schema.schema_version(self.db)
        except ValueError as exc:
            raise LedgerVersionError(f"ledger {self.path}: {exc}") from None
        if version is not None and version > ledger_schema.SCHEMA_VERSION:
            raise LedgerVersionError(
                f"ledger {self.path}: schema version {version} is newer than this hindsight-batch reads (up to "
                f"{ledger_schema.SCHEMA_VERSION}); use the newer hindsight-batch that wrote it, or another --state "
                "folder")
        return version

    def _migrate(self, version: int | None) -> None:
        if version is not None and version < ledger_schema.SCHEMA_VERSION:
            self._keep_copy(version)
        try:
            ledger_schema.migrate(self.db, self.path, version)
        except (OSError, duckdb.Error):
            raise
        except Exception as exc:  # a row an older version stored that cannot be read: the ledger stays as it was
            raise LedgerPathError(f"ledger {self.path}: cannot bring it to schema version "
                                  f"{ledger_schema.SCHEMA_VERSION}: {failure_reason(exc)}") from None

    def _keep_copy(self, version: int) -> None:
        """Before a migration: the ledger as it is, as ``ledger.v<version>.duckdb`` beside it (0600), so that going
        back to the hindsight-batch that wrote it stays possible (a migrated ledger is no use to it)."""
        copy = self.path.with_name(f"ledger.v{version}.duckdb")
        if copy.exists():
            return
        self.db.execute("CHECKPOINT")  # everything in the file itself, nothing left in its write-ahead log

        def write(fd: int) -> None:
            with self.path.open("rb") as source:
                while block := source.read(1 << 20):
                    write_all(fd, block)

        replace_file(copy, write, private=True)

    def _close_db(self) -> None:
        try:
            if self._latest is not None:
                self._latest.close()
            self.db.close()
        finally:  # (a checkpoint the disk refused: the lock is released all the same)
            self._umask.close()
            self._unlock()

    @staticmethod
    def _undo(created: list[Path], lock_path: Path, lock_existed: bool) -> None:
        """Leave nothing behind after a failed start: the lock file and the folders this start created."""
        if created and not lock_existed:
            with contextlib.suppress(OSError):
                lock_path.unlink(missing_ok=True)
        for folder in created:  # deepest first; a folder someone filled meanwhile stays
            try:
                folder.rmdir()
            except OSError:
                break

    def close(self) -> None:
        self._close_db()

    def _unlock(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        """Closes the ledger. A write the disk refused for want of room, here or in the block (DuckDB names its
        file; a temporary file of the ledger's is in the state folder), becomes one line naming the ledger."""
        try:
            self.close()
        except Exception as closing:
            if exc is None:
                raise self._unwritable(closing) or closing from None
        if isinstance(exc, duckdb.Error) and (unwritable := self._unwritable(exc)) is not None:
            raise unwritable from None

    def _unwritable(self, exc: BaseException) -> LedgerPathError | None:
        reason = out_of_room(exc)
        return None if reason is None else LedgerPathError(f"ledger {self.path}: cannot write: {reason}")

    def fingerprint_key(self) -> bytes:
        """A random key, made once per ledger, for the HMAC fingerprints of redacted secrets."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'fingerprint_key'").fetchone()
        if row:
            return bytes.fromhex(row[0])
        key = secrets.token_hex(32)
        self.db.execute("INSERT INTO meta VALUES ('fingerprint_key', ?)", [key])
        return bytes.fromhex(key)

    # runs
    def start_run(self, run_id: str, command: str, mode: str) -> None:
        self.db.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, NULL, 'running', NULL)", [run_id, command, mode, _now()]
        )

    def finish_run(self, run_id: str, status: str, summary: Mapping[str, Any]) -> None:
        self.db.execute(
            "UPDATE runs SET finished_at = ?, status = ?, summary = ? WHERE run_id = ?",
            [_now(), status, json.dumps(summary), run_id],
        )

    def record_failed_files(self, run_id: str, failed: list[dict[str, Any]]) -> None:
        """Files the run could not read or plan: (file, line where known, reason)."""
        self._insert("INSERT INTO failed_files VALUES", 4,
                     [[run_id, f["file"], f.get("line"), f["reason"]] for f in failed])

    def runs(self, last: int) -> list[RunRow]:
        """The ``last`` runs, latest first."""
        rows = self.db.execute("SELECT run_id, command, mode, started_at, finished_at, status FROM runs "
                               "ORDER BY started_at DESC LIMIT ?", [last]).fetchall()
        return [RunRow(*r) for r in rows]

    def has_run(self, run_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone() is not None

    def failed_files(self, run_id: str) -> list[tuple[str, int | None, str]]:
        """(file, line where known, reason) of each file ``run_id`` could not read or plan, by file."""
        rows = self.db.execute("SELECT path, line, reason FROM failed_files WHERE run_id = ? ORDER BY path",
                               [run_id]).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    # sources
    def sources(self) -> dict[str, SourceState]:
        rows = self.db.execute("SELECT path, size, mtime_ns, settings_hash, last_run_id, sha256, header FROM sources"
                               ).fetchall()
        return {r[0]: SourceState(r[1], r[2], r[3], r[4], r[5], r[6]) for r in rows}

    def source_sessions(self) -> dict[str, str]:
        """path -> session id of every source seen."""
        return dict(self.db.execute("SELECT path, session_id FROM sources").fetchall())

    def record_sources(self, rows: Sequence[SourceRecord]) -> None:
        """(path, size, mtime_ns, session id, settings hash, run id, SHA-256, header) of sources just read."""
        now = _now()
        self._insert("INSERT OR REPLACE INTO sources VALUES", 9,
                     [[path, size, mtime, session, shape, run, now, sha, header] for path, size, mtime, session, shape,
                      run, sha, header in rows])

    def record_headers(self, rows: Sequence[tuple[str, str]]) -> None:
        """(path, header) of recorded sources whose header the ledger lacks (recorded before it kept them)."""
        for start in range(0, len(rows), _COLUMN_BATCH):
            part = rows[start : start + _COLUMN_BATCH]
            self.db.execute("UPDATE sources SET header = h.header FROM (SELECT unnest(?::VARCHAR[]) AS path, "
                            "unnest(?::VARCHAR[]) AS header) h WHERE sources.path = h.path",
                            [[path for path, _ in part], [header for _, header in part]])

    def record_run_sources(self, run_id: str, rows: Sequence[ReviewedSource]) -> None:
        """What the dry run ``run_id`` saw of each source it planned or reused."""
        self._insert("INSERT INTO run_sources VALUES", 7,
                     [[run_id, r.path, r.size, r.mtime_ns, r.sha256, r.settings_hash, r.rows_run_id] for r in rows])

    def run_kind(self, run_id: str) -> tuple[str, str, str] | None:
        """(command, mode, status) of ``run_id``, or None when the ledger has no such run."""
        row = self.db.execute("SELECT command, mode, status FROM runs WHERE run_id = ?", [run_id]).fetchone()
        return (str(row[0]), str(row[1]), str(row[2])) if row else None

    def reviewed_sources(self, run_id: str) -> dict[str, ReviewedSource]:
        """path -> what the dry run ``run_id`` saw of it (empty for a run from before ``run_sources`` existed)."""
        rows = self.db.execute("SELECT path, size, mtime_ns, sha256, settings_hash, rows_run_id FROM run_sources "
                               "WHERE run_id = ? ORDER BY path", [run_id]).fetchall()
        return {r[0]: ReviewedSource(*r) for r in rows}

    def reviewed_items(self, run_id: str) -> dict[str, set[ReviewedItem]]:
        """path -> (document id, item hash, bank) of every item the dry run ``run_id`` planned for it: its manifest
        rows, or for a reused source those of the run that last read it."""
        rows = self.db.execute(
            "SELECT s.path, m.document_id, m.item_sha256, m.bank_id FROM run_sources s JOIN manifest m "
            "ON m.run_id = s.rows_run_id AND m.source_file = s.path "
            "WHERE s.run_id = ? AND m.document_id IS NOT NULL", [run_id]).fetchall()
        found: dict[str, set[ReviewedItem]] = {}
        for path, document, item, bank in rows:
            found.setdefault(path, set()).add(ReviewedItem(document, item or "", bank or ""))
        return found

    def _insert(self, statement: str, width: int, rows: list[list[Any]]) -> None:
        """Many rows in few statements, bound as one list per column and unnested: a handful of parameters
        whatever the row count (DuckDB's executemany binds row by row, a thousand times slower; one parameter per
        value, as before, took a third of a second for a thousand sources)."""
        if not rows:
            return
        table = statement.split(" INTO ", 1)[1].split()[0]
        types = self._column_types(table)
        assert len(types) == width, (table, types)
        columns = ", ".join(f"unnest(?::{kind}[])" for kind in types)
        for start in range(0, len(rows), _COLUMN_BATCH):
            part = rows[start : start + _COLUMN_BATCH]
            self.db.execute(f"{statement.removesuffix(' VALUES')} SELECT * FROM (SELECT {columns})",
                            [list(column) for column in zip(*part, strict=True)])

    def _column_types(self, table: str) -> list[str]:
        if table not in self._types:
            self._types[table] = [str(r[0]) for r in self.db.execute(
                "SELECT data_type FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                [table]).fetchall()]
        return self._types[table]

    # documents
    def document_hashes(self) -> dict[tuple[str, str], tuple[str, str]]:
        """(bank, document) -> (item hash, status) for every document an applied run has sent; a failure that
        may pass on a retry (a server error; rows from before ``retryable`` existed too) has status ``retry``."""
        rows = self.db.execute(
            "SELECT bank_id, document_id, item_hash, CASE WHEN status = 'failed' AND retryable IS DISTINCT FROM "
            "false THEN 'retry' ELSE status END FROM documents"
        ).fetchall()
        return {(r[0], r[1]): (r[2], r[3]) for r in rows}

    def send_attempts(self, bank_id: str, rows: Iterable[DocumentRow]) -> dict[str, int]:
        """document id -> the send attempt its next request is: 0 for a document never sent; the same attempt
        again while the document is still ``pending`` (a crash-and-retry, or a refused batch split: the request
        must stay a no-op on the server, S5); one more after it settled (missing, forgotten, failed, changed), so
        that a deliberate resend of the same content gets a new operation id the server has not seen done."""
        ids = [r.document_id for r in rows]
        found: dict[str, int] = {}
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            found.update(self.db.execute(
                "SELECT document_id, coalesce(attempt, 0) + CASE WHEN status = 'pending' THEN 0 ELSE 1 END "
                f"FROM documents WHERE bank_id = ? AND document_id IN ({', '.join('?' * len(part))})",
                [bank_id, *part]).fetchall())
        return {doc_id: int(found.get(doc_id, 0)) for doc_id in ids}

    def mark_pending(self, rows: Iterable[DocumentRow], operation_id: str, run_id: str,
                     attempts: Mapping[str, int] | None = None) -> None:
        """Record documents as about to be sent (S5: a kill after this point is resumed by the next run), with
        the send attempt (:meth:`send_attempts`) their operation id was made from."""
        now = _now()
        rows = list(rows)
        attempts = attempts or {}
        self._insert(
            "INSERT OR REPLACE INTO documents VALUES", 16,
            [[r.bank_id, r.document_id, r.bank_role, r.source_path, r.session_id, r.content_hash, r.item_hash,
              "pending", operation_id, None, run_id, now, json.dumps(r.tags), json.dumps(r.metadata, sort_keys=True),
              None, attempts.get(r.document_id, 0)] for r in rows],
        )
        # Which runs wrote each document: `forget --run` deletes only what no other run also wrote.
        self._insert("INSERT INTO deliveries VALUES", 5,
                     [[run_id, r.bank_id, r.document_id, r.item_hash, now] for r in rows])

    def set_status(self, bank_id: str, document_ids: Iterable[str], status: str, error: str | None = None,
                   retryable: bool | None = None) -> None:
        ids = list(document_ids)
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            self.db.execute(
                "UPDATE documents SET status = ?, error = ?, retryable = ?, updated_at = ? WHERE bank_id = ? "
                f"AND document_id IN ({', '.join('?' * len(part))})",
                [status, error, retryable, _now(), bank_id, *part],
            )

    def documents(self, statuses: Iterable[str] | None = None) -> list[DocumentRow]:
        """Documents the ledger planned to deliver (all of them, or those in ``statuses``)."""
        wanted = list(statuses) if statuses is not None else None
        where = f"WHERE status IN ({', '.join('?' * len(wanted))}) " if wanted else ""
        rows = self.db.execute(
            f"SELECT {_DOCUMENT_COLUMNS} FROM documents {where}ORDER BY bank_id, document_id", wanted or []
        ).fetchall()
        return [_document_row(r) for r in rows]

    def documents_by_id(self, bank_id: str, document_ids: list[str]) -> list[DocumentRow]:
        found: list[DocumentRow] = []
        for start in range(0, len(document_ids), _BATCH):
            part = document_ids[start : start + _BATCH]
            rows = self.db.execute(
                f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE bank_id = ? AND document_id IN "
                f"({', '.join('?' * len(part))})", [bank_id, *part]
            ).fetchall()
            found += [_document_row(r) for r in rows]
        return found

    def open_operations(self, statuses: tuple[str, ...] = ("sent",)) -> dict[tuple[str, str], list[str]]:
        """(bank, operation) -> documents in ``statuses`` (default ``sent``: accepted by the server, not yet seen
        to complete)."""
        rows = self.db.execute(
            "SELECT bank_id, operation_id, document_id FROM documents "
            f"WHERE status IN ({', '.join('?' * len(statuses))}) AND operation_id IS NOT NULL", list(statuses)
        ).fetchall()
        result: dict[tuple[str, str], list[str]] = {}
        for bank_id, op, doc in rows:
            result.setdefault((bank_id, op), []).append(doc)
        return result

    def documents_by_status(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT status, count(*) FROM documents GROUP BY status").fetchall())

    def known_sessions(self) -> set[str]:
        rows = self.db.execute("SELECT session_id FROM sources UNION SELECT session_id FROM documents").fetchall()
        return {r[0] for r in rows if r[0]}

    def planned_document_ids(self) -> dict[str, set[tuple[str, str]]]:
        """session id -> (bank, document) of the current plan: the manifest rows of the run that last read each
        source."""
        rows = self.db.execute(
            "SELECT s.session_id, m.bank_id, m.document_id FROM manifest m JOIN sources s "
            "ON m.run_id = s.last_run_id AND m.source_file = s.path WHERE m.document_id IS NOT NULL"
        ).fetchall()
        result: dict[str, set[tuple[str, str]]] = {}
        for session, bank, doc in rows:
            result.setdefault(session, set()).add((bank, doc))
        return result

    def run_deliveries(self, run_id: str) -> list[tuple[str, str, bool]]:
        """(bank, document, also written by another run) for every document ``run_id`` sent; ledgers from
        before the ``deliveries`` table fall back to the run that last wrote each document."""
        rows = self.db.execute(
            "SELECT d.bank_id, d.document_id, bool_or(o.run_id IS NOT NULL) FROM "
            "(SELECT DISTINCT bank_id, document_id FROM deliveries WHERE run_id = ? UNION "
            " SELECT bank_id, document_id FROM documents WHERE run_id = ?) d "
            "LEFT JOIN deliveries o ON o.bank_id = d.bank_id AND o.document_id = d.document_id AND o.run_id <> ? "
            "GROUP BY 1, 2 ORDER BY 1, 2", [run_id, run_id, run_id]
        ).fetchall()
        return [(r[0], r[1], bool(r[2])) for r in rows]

    def record_forgotten(self, run_id: str, rows: Iterable[tuple[str, str, str]], by_run: str) -> None:
        """(bank, document, action) of a ``forget --run``: ``deleted``, ``already-gone`` or ``kept-shared``."""
        now = _now()
        self._insert("INSERT INTO forgotten VALUES", 6,
                     [[run_id, bank, doc, action, by_run, now] for bank, doc, action in rows])

    def forgotten(self, run_id: str) -> dict[str, int]:
        rows = self.db.execute("SELECT action, count(*) FROM forgotten WHERE run_id = ? GROUP BY 1 ORDER BY 1",
                               [run_id]).fetchall()
        return {r[0]: r[1] for r in rows}

    # manifest
    def add_manifest_rows(self, rows: Iterable[ManifestRow]) -> None:
        """Manifest rows (as the manifest file has them; ``content`` is stored only when a row has it)."""
        self.add_manifest_records([manifest_table.record_line(r.as_json()) for r in rows])

    def add_manifest_records(self, lines: Sequence[bytes]) -> None:
        """Manifest rows already encoded by :func:`manifest_table.record_line` (the importer encodes each row once,
        for the manifest file and for here), loaded through a temporary JSON-lines file
        (:func:`ledger_schema.load_records`)."""
        # In slices: DuckDB's JSON reader holds memory in proportion to what one load reads (a session of many
        # short messages hands over thousands of rows at once: 8,800 rows took about 55 MB in one load).
        for start in range(0, len(lines), LOAD_ROWS):
            try:
                with tempfile.NamedTemporaryFile("wb", dir=self.path.parent, prefix=".manifest-",
                                                 suffix=".jsonl") as out:
                    out.write(b"\n".join(lines[start:start + LOAD_ROWS]) + b"\n")
                    out.flush()
                    ledger_schema.load_records(self.db, out.name)
            except OSError as exc:  # the state folder's disk is full: said so, naming the ledger
                raise self._unwritable(exc) or exc from None

    def manifest_counts(self, run_id: str) -> ManifestCounts:
        """``report``'s counts of one run's manifest rows, computed by DuckDB."""
        def ranked(query: str) -> list[tuple[str, int]]:
            return [(r[0], int(r[1])) for r in self.db.execute(_RUN_ROWS + query, [run_id]).fetchall()]

        chunks = self.db.execute(_RUN_ROWS + "SELECT count(*) FROM chunks", [run_id]).fetchone()
        routes = ranked("SELECT route, count(*) AS n FROM chunks GROUP BY 1 ORDER BY n DESC, min(r)")
        banks = ranked("SELECT bank_id, count(*) AS n FROM run_rows WHERE bank_id <> '' GROUP BY 1 "
                       "ORDER BY n DESC, min(r)")
        # Each rule's first appearance: the first chunk that has it, then its place in that chunk's map.
        redactions = ranked(
            "SELECT rule, sum(n) AS total FROM (SELECT r, unnest(map_keys(redactions)) AS rule, "
            "unnest(map_values(redactions)) AS n, unnest(range(cardinality(redactions)::BIGINT)) AS place FROM chunks) "
            "GROUP BY 1 ORDER BY total DESC, min(r), arg_min(place, r)")
        skips = self.db.execute(_RUN_ROWS + "SELECT skip_reason, reason, count(*) FROM chunks WHERE status = "
                                "'skipped' GROUP BY 1, 2 ORDER BY min(r)", [run_id]).fetchall()
        return ManifestCounts(int(chunks[0]) if chunks else 0, routes, banks, redactions,
                              [(r[0], r[1], int(r[2])) for r in skips])

    def expect_reuse(self, paths: Sequence[str]) -> None:
        """The sources an import may reuse (:meth:`latest_rows`), in the order it will ask for them: their rows are
        then read in one pass (:class:`LatestRows`)."""
        if self._latest is not None:
            self._latest.close()
        self._latest = LatestRows(self.db, paths)

    def latest_rows(self, source_file: str, run_id: str) -> list[dict[str, Any]]:
        """The manifest rows ``run_id`` wrote for ``source_file`` (as the manifest file has them,
        :meth:`ManifestRow.as_json`, in this version's form, without content), in the order written: what an
        unchanged source reuses. From the pass :meth:`expect_reuse` set up, else looked up alone."""
        found = self._latest.take(source_file, run_id) if self._latest is not None else None
        if found is None:
            found = [manifest_table.from_columns(values) for values in self.db.execute(
                f"SELECT {manifest_table.select_list()} FROM manifest WHERE run_id = ? AND source_file = ? "
                "ORDER BY rowid", [run_id, source_file]).fetchall()]
        from hindsight_batch.plan.rows import current_form  # loads routing's models: only when rows are reused

        return [current_form(data) for data in found]

    def totals(self) -> dict[str, Any]:
        """How much the ledger holds: ``{"runs", "sources", "documents": {status: count}}``."""
        runs = self.db.execute("SELECT count(*) FROM runs").fetchone()
        sources = self.db.execute("SELECT count(*) FROM sources").fetchone()
        docs = self.db.execute("SELECT status, count(*) FROM documents GROUP BY status").fetchall()
        return {
            "runs": runs[0] if runs else 0,
            "sources": sources[0] if sources else 0,
            "documents": {status: count for status, count in docs},
        }
