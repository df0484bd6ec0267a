"""Opening the ledger: the lock, the DuckDB file, the schema migration; and closing it.

The ledger is a DuckDB file with runs, sources, documents and manifest rows. It makes re-runs cheap (an unchanged
source is not parsed again), uploads resumable (each document's status and operation id), and ``report`` possible;
plain SQL over the file works too (one column per manifest field). One writer at a time: the ledger holds an
exclusive lock file for as long as it is open, and a second run gets :class:`BusyError` (exit 75) at once.
Opening a ledger made by an older version migrates it (:mod:`hindsight_batch.ledger.schema`); one made by a newer
version is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from hindsight_batch.base.fsutil import PRIVATE_FILE, open_private, private_dir, private_umask, replace_file, write_all
from hindsight_batch.errors import BusyError
from hindsight_batch.ledger import schema as ledger_schema
from hindsight_batch.ledger.documents import Documents
from hindsight_batch.ledger.engine import duckdb
from hindsight_batch.ledger.forgotten import Forgotten
from hindsight_batch.ledger.from_run import FromRun
from hindsight_batch.ledger.latest_rows import LatestRows
from hindsight_batch.ledger.manifest import ManifestRows
from hindsight_batch.ledger.rows import LedgerTotals
from hindsight_batch.ledger.runs import Runs
from hindsight_batch.ledger.sources import Sources
from hindsight_batch.ledger.tables import LedgerPathError, LedgerVersionError
from hindsight_batch.redaction.messages import failure_reason


def default_state_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "state")
    return Path(base) / "hindsight-batch"


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and those of its parents that do not exist yet, deepest first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


class Ledger(Runs, Sources, FromRun, Documents, Forgotten, ManifestRows):
    """The ledger in a state folder, open and locked: each table's reads and writes are in the part named for it
    (:mod:`~hindsight_batch.ledger.runs`, ``sources``, ``from_run``, ``documents``, ``forgotten``, ``manifest``);
    this class opens, locks, migrates and closes."""

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

    def fingerprint_key(self) -> bytes:
        """A random key, made once per ledger, for the HMAC fingerprints of redacted secrets."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'fingerprint_key'").fetchone()
        if row:
            return bytes.fromhex(row[0])
        key = secrets.token_hex(32)
        self.db.execute("INSERT INTO meta VALUES ('fingerprint_key', ?)", [key])
        return bytes.fromhex(key)

    def totals(self) -> LedgerTotals:
        """How much the ledger holds."""
        runs = self.db.execute("SELECT count(*) FROM runs").fetchone()
        sources = self.db.execute("SELECT count(*) FROM sources").fetchone()
        docs = self.db.execute("SELECT status, count(*) FROM documents GROUP BY status").fetchall()
        return LedgerTotals(runs[0] if runs else 0, sources[0] if sources else 0,
                            {status: count for status, count in docs})
