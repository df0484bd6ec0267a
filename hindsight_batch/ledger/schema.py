"""The ledger's tables, its schema version, and the migration of older ledgers, run when a ledger is opened.

Version 1 (no ``schema_version`` in ``meta``) kept each manifest row as one JSON string (column ``row``), a
``parsed_offset`` column nobody read in ``sources``, and two columns of ``documents`` added by ``ALTER TABLE``.
Version 2 has one column per manifest field (:mod:`hindsight_batch.ledger.manifest_table`), each source's SHA-256,
and ``run_sources``: what each dry run saw of each source it planned or reused (size, mtime, SHA-256, settings hash,
and the run whose manifest rows hold its plan), which ``import --apply --from-run`` checks before sending.
Version 3 keeps each source's session header (``sources.header``), so that a re-run does not open an unchanged file.
A ledger is brought to the current version in one transaction: a failure leaves it as it was. (``Ledger`` refuses
a ledger newer than this code, untouched.)
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from hindsight_batch.base import jsoncodec
from hindsight_batch.ledger import manifest_table
from hindsight_batch.ledger.engine import duckdb

SCHEMA_VERSION = 3

_SOURCES_V2 = """(
    path VARCHAR PRIMARY KEY, size BIGINT, mtime_ns BIGINT, session_id VARCHAR, settings_hash VARCHAR,
    last_run_id VARCHAR, seen_at TIMESTAMP, sha256 VARCHAR"""
# ``header``: the source's session header as JSON text (:func:`hindsight_batch.session.model.header_text`).
_SOURCES = _SOURCES_V2 + ", header VARCHAR)"
_TABLES = f"""
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE runs (
    run_id VARCHAR PRIMARY KEY, command VARCHAR, mode VARCHAR, started_at TIMESTAMP, finished_at TIMESTAMP,
    status VARCHAR, summary VARCHAR);
CREATE TABLE sources {_SOURCES};
CREATE TABLE documents (
    bank_id VARCHAR, document_id VARCHAR, bank_role VARCHAR, source_path VARCHAR, session_id VARCHAR,
    content_hash VARCHAR, item_hash VARCHAR, status VARCHAR, operation_id VARCHAR, error VARCHAR,
    run_id VARCHAR, updated_at TIMESTAMP, tags VARCHAR, metadata VARCHAR, retryable BOOLEAN, attempt INTEGER,
    PRIMARY KEY (bank_id, document_id));
CREATE TABLE deliveries (
    run_id VARCHAR, bank_id VARCHAR, document_id VARCHAR, item_hash VARCHAR, sent_at TIMESTAMP);
CREATE TABLE forgotten (
    run_id VARCHAR, bank_id VARCHAR, document_id VARCHAR, action VARCHAR, by_run VARCHAR, done_at TIMESTAMP);
CREATE TABLE failed_files (run_id VARCHAR, path VARCHAR, line BIGINT, reason VARCHAR);
CREATE TABLE run_sources (
    run_id VARCHAR, path VARCHAR, size BIGINT, mtime_ns BIGINT, sha256 VARCHAR, settings_hash VARCHAR,
    rows_run_id VARCHAR);
"""

# What every version-1 ledger has once today's version-1 code opened it (older ones lacked some of it): the tables
# it lacks, as the current version has them (the others are left as they are here), and the two columns added late.
_V1_COMPLETION = _TABLES.replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ") + """
ALTER TABLE documents ADD COLUMN IF NOT EXISTS retryable BOOLEAN;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS attempt INTEGER;
"""

_READ_BATCH = 2000


def _tables(db: duckdb.DuckDBPyConnection) -> set[str]:
    rows = db.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                      "AND schema_name = 'main'").fetchall()
    return {str(r[0]) for r in rows}


def schema_version(db: duckdb.DuckDBPyConnection) -> int | None:
    """The ledger's schema version: None for an empty file, 1 for a ledger from before versions were kept.
    Raises ValueError when ``meta`` holds something else than a version number."""
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except duckdb.CatalogException:  # no meta table: a new file (or a version-1 ledger older than meta)
        row = None
    if row is None:
        return 1 if _tables(db) else None
    try:
        version = int(row[0])
    except (TypeError, ValueError):
        version = 0
    if version < 1:
        raise ValueError(f"meta.schema_version is {str(row[0])[:40]!r}, not a version number")
    return version


def migrate(db: duckdb.DuckDBPyConnection, path: Path, version: int | None) -> None:
    """Make the tables of a new ledger (``version`` None), or bring an older one (``path``, of schema ``version``)
    to :data:`SCHEMA_VERSION`, in one transaction; a ledger of this version (or a newer one, which the caller
    refuses) is left alone."""
    if version is not None and version >= SCHEMA_VERSION:
        return
    steps = [_create] if version is None else _MIGRATIONS[version - 1 :]
    db.execute("BEGIN TRANSACTION")
    try:
        for step in steps:
            step(db, path)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _create(db: duckdb.DuckDBPyConnection, _path: Path) -> None:
    db.execute(_TABLES + manifest_table.DDL)


def _v1_to_v2(db: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Manifest rows from JSON strings into columns (in the order written: reuse gives them back in it), and
    ``sources`` without ``parsed_offset``."""
    db.execute(_V1_COMPLETION)
    db.execute(f"CREATE TABLE sources_v2 {_SOURCES_V2})")
    # Version-1 rows lack the project, the chunk times and the skip reason: marking each source's settings as
    # older makes the next run read it once more (what the server already holds is not sent again).
    db.execute("INSERT INTO sources_v2 SELECT path, size, mtime_ns, session_id, settings_hash || ' (version 1)', "
               "last_run_id, seen_at, NULL FROM sources ORDER BY rowid")
    db.execute("DROP TABLE sources")
    db.execute("ALTER TABLE sources_v2 RENAME TO sources")
    db.execute(manifest_table.DDL.replace("CREATE TABLE manifest", "CREATE TABLE manifest_v2", 1))
    cursor = db.execute('SELECT "row" FROM manifest ORDER BY rowid')
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=".migrate-", suffix=".jsonl") as out:
        while batch := cursor.fetchmany(_READ_BATCH):
            for (text,) in batch:
                out.write(jsoncodec.dumps(manifest_table.to_record(jsoncodec.loads(text))) + b"\n")
        out.flush()
        if out.tell():
            load_records(db, out.name, "manifest_v2")
    db.execute("DROP TABLE manifest")
    db.execute("ALTER TABLE manifest_v2 RENAME TO manifest")


def _v2_to_v3(db: duckdb.DuckDBPyConnection, _path: Path) -> None:
    """Each source's session header: unknown (NULL) for the sources already recorded, whose files the next run
    peeks at as before and records."""
    db.execute("ALTER TABLE sources ADD COLUMN header VARCHAR")


# _MIGRATIONS[n - 1] brings a version-n ledger to version n + 1.
_MIGRATIONS: list[Callable[[duckdb.DuckDBPyConnection, Path], None]] = [_v1_to_v2, _v2_to_v3]


def load_records(db: duckdb.DuckDBPyConnection, jsonl: str, table: str = "manifest") -> None:
    """Manifest records (:func:`manifest_table.to_record`, one per line of ``jsonl``) into ``table``: DuckDB
    reads a JSON-lines file far faster than it binds thousands of statement parameters."""
    types = ", ".join(f"'{name}': '{kind}'" for name, kind in manifest_table.COLUMNS)
    db.execute(f"INSERT INTO {table} SELECT * FROM read_json(?, format = 'newline_delimited', "
               f"columns = {{{types}}})", [jsonl])
