"""What the review page shows, read from the ledger in SQL.

Every query reads the view ``review_rows``, whose columns are the manifest row contract (one column per field:
``run_id``, ``source_file``, ``session_id``, ``segment``, ``chunk_index``, ``bank_id``, ``project``,
``started_at``, ``route``, ``skip_reason``, ``decision``, ``messages_dropped``, ``redactions``, ``content``, …).
One chunk can have several rows (one per target bank); the ``chunks`` view folds them into one row per chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from hindsight_batch.errors import UsageError
from hindsight_batch.ledger import RUN_ROWS_FILTER
from hindsight_batch.ledger.engine import duckdb


def rows_view(db: duckdb.DuckDBPyConnection) -> None:
    """``review_rows``: the ledger's manifest rows as the page reads them (one column per manifest field; see
    ``ledger/manifest_table.py``). Rows migrated from a version-1 ledger have no project, times or skip reason."""
    db.execute("CREATE OR REPLACE TEMP VIEW review_rows AS SELECT * EXCLUDE (annotations) FROM manifest")


# The chosen run's rows, read once (the view may compute its columns), and one row per chunk (a chunk written to
# two banks has two manifest rows).
_RUN_ROWS = f"CREATE OR REPLACE TEMP TABLE review_run AS SELECT * FROM review_rows m WHERE {RUN_ROWS_FILTER}"
_CHUNKS = """
    CREATE OR REPLACE TEMP TABLE review_chunks AS
    SELECT source_file, segment, chunk_index,
           any_value(session_id) AS session_id, any_value(project) AS project,
           min(started_at) AS started_at, max(ended_at) AS ended_at,
           any_value(first_entry_id) AS first_entry_id, any_value(last_entry_id) AS last_entry_id,
           any_value(route) AS route, any_value(confidence) AS confidence, any_value(reason) AS reason,
           any_value(skip_reason) AS skip_reason, any_value(mode) AS mode, any_value(decision) AS decision,
           any_value(tags) AS tags, any_value(bytes) AS bytes, any_value(status) AS status,
           list_sort(list_distinct(list(bank_id))) AS banks,
           any_value(messages_dropped) AS messages_dropped, any_value(redactions) AS redactions,
           any_value(content) AS content
    FROM review_run
    GROUP BY source_file, segment, chunk_index
"""


class ReviewRun(TypedDict):
    run_id: str
    command: str
    mode: str
    started_at: str | None
    finished_at: str | None
    status: str


class Destination(TypedDict):
    """A bank the run writes to, for one project."""

    bank: str
    project: str | None
    sessions: int
    chunks: int
    bytes: int
    first: str | None  # the earliest chunk's start
    last: str | None


class Suggestion(TypedDict):
    """A chunk routing would also write to the User Bank, not written in explicit-only mode."""

    session: str
    project: str | None
    segment: str
    chunk: int
    route: str
    confidence: float
    reason: str
    user_bank: str | None  # its id


class ReviewChunk(TypedDict):
    """One chunk as the page's script reads it (short keys: the page holds thousands)."""

    seg: str
    i: int
    first: str
    last: str
    route: str
    conf: float
    reason: str
    skip: str | None
    tags: list[str]
    status: str
    banks: list[str]
    bytes: int
    red: dict[str, int]  # redactions by rule
    content: str | None


class ReviewSession(TypedDict):
    id: str
    file: str
    project: str | None
    start: str | None
    end: str | None
    banks: list[str]
    routes: list[str]
    bytes: int
    chunks: list[ReviewChunk]


@dataclass
class ReviewData:
    """Everything the page shows; lists of plain values, ready for JSON."""

    run: ReviewRun
    destinations: list[Destination] = field(default_factory=list)
    timeline: list[tuple[str, str, int]] = field(default_factory=list)  # (bank, week start, chunks)
    skipped: list[tuple[str, int]] = field(default_factory=list)
    dropped: list[tuple[str, int]] = field(default_factory=list)
    redactions: list[tuple[str, int]] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    sessions: list[ReviewSession] = field(default_factory=list)
    chunks: int = 0


def _iso(value: Any) -> str | None:
    return None if value is None else str(value.isoformat() if hasattr(value, "isoformat") else value)


def _pick_run(db: duckdb.DuckDBPyConnection, run_id: str | None) -> ReviewRun:
    if run_id is None:
        # The latest run with a plan: rows of its own, or (a dry run) sources it reused, whose rows it takes as its
        # own (RUN_ROWS_FILTER); an applied re-run over unchanged files has neither.
        found = db.execute("SELECT run_id FROM runs WHERE run_id IN (SELECT DISTINCT run_id FROM review_rows) "
                           "OR run_id IN (SELECT run_id FROM run_sources) "
                           "ORDER BY started_at DESC LIMIT 1").fetchone()
        if not found:
            raise UsageError("the ledger holds no planned chunks yet: run 'hindsight-batch import' first")
        run_id = str(found[0])
    row = db.execute("SELECT run_id, command, mode, started_at, finished_at, status FROM runs WHERE run_id = ?",
                     [run_id]).fetchone()
    if row is None:
        raise UsageError(f"--run {run_id}: no such run in the ledger")
    return {"run_id": row[0], "command": row[1], "mode": row[2], "started_at": _iso(row[3]),
            "finished_at": _iso(row[4]), "status": row[5]}


def _counts(db: duckdb.DuckDBPyConnection, column: str) -> list[tuple[str, int]]:
    """Sum a MAP(VARCHAR, INTEGER) column over the chunks: (key, total), largest first."""
    rows = db.execute(f"SELECT k, sum(v)::BIGINT FROM (SELECT unnest(map_keys({column})) AS k, "
                      f"unnest(map_values({column})) AS v FROM review_chunks) GROUP BY k ORDER BY 2 DESC, 1"
                      ).fetchall()
    return [(str(k), int(v)) for k, v in rows]


def load_review(db: duckdb.DuckDBPyConnection, run_id: str | None = None) -> ReviewData:
    rows_view(db)
    run = _pick_run(db, run_id)
    db.execute(_RUN_ROWS, [run["run_id"]])
    db.execute(_CHUNKS)
    data = ReviewData(run=run)
    data.chunks = int((db.execute("SELECT count(*) FROM review_chunks").fetchone() or (0,))[0])
    data.destinations = [
        {"bank": r[0], "project": r[1], "sessions": r[2], "chunks": r[3], "bytes": int(r[4] or 0),
         "first": _iso(r[5]), "last": _iso(r[6])}
        for r in db.execute(
            "SELECT bank_id, project, count(DISTINCT session_id), count(DISTINCT (source_file, segment, chunk_index)),"
            " sum(bytes), min(started_at), max(coalesce(ended_at, started_at)) FROM review_run "
            "WHERE bank_id IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2").fetchall()]
    data.timeline = [
        (str(r[0]), str(r[1].date()), int(r[2]))
        for r in db.execute(
            "SELECT bank_id, date_trunc('week', started_at) AS week, count(DISTINCT (source_file, segment, "
            "chunk_index)) FROM review_run WHERE bank_id IS NOT NULL AND started_at IS NOT NULL "
            "GROUP BY 1, 2 ORDER BY 1, 2").fetchall()]
    data.skipped = [(str(r[0]), int(r[1])) for r in db.execute(
        "SELECT coalesce(skip_reason, status), count(*) FROM review_chunks WHERE status IN ('skipped', "
        "'not-written') OR skip_reason IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1").fetchall()]
    data.dropped = _counts(db, "messages_dropped")
    data.redactions = _counts(db, "redactions")
    # A User Bank suggestion: in explicit-only mode the decision keeps a User Bank target (bankRole "global",
    # routing.models.USER_BANK) that is not written (routing/strategy.py); the chunk goes to the project bank only.
    data.suggestions = [
        {"session": r[0], "project": r[1], "segment": r[2], "chunk": r[3], "route": r[4], "confidence": r[5],
         "reason": r[6], "user_bank": r[7]}
        for r in db.execute(
            "SELECT c.session_id, c.project, c.segment, c.chunk_index, c.route, c.confidence, c.reason, "
            "t->>'bankId' FROM review_chunks c, "
            "unnest(CAST(json_extract(c.decision, '$.targets[*]') AS JSON[])) AS u(t) "
            "WHERE c.mode = 'explicit-only' AND t->>'bankRole' = 'global' AND t->>'willWrite' = 'false' "
            "ORDER BY c.project, c.session_id, c.segment, c.chunk_index").fetchall()]
    data.sessions = _sessions(db)
    return data


def _sessions(db: duckdb.DuckDBPyConnection) -> list[ReviewSession]:
    """Every session with its chunks (compact keys: the page holds thousands)."""
    # Sessions by when they started (undated ones last); a session's chunks in order, its main branch first.
    rows = db.execute(
        "SELECT session_id, source_file, segment, chunk_index, project, "
        "min(started_at) OVER w, max(coalesce(ended_at, started_at)) OVER w, first_entry_id, "
        "last_entry_id, route, confidence, reason, skip_reason, tags, bytes, status, banks, redactions, content "
        "FROM review_chunks WINDOW w AS (PARTITION BY source_file) "
        "ORDER BY 6 NULLS LAST, source_file, segment <> 'main', segment, chunk_index").fetchall()
    sessions: dict[str, ReviewSession] = {}
    for (session, source, segment, index, project, started, ended, first, last, route, confidence, reason, skip,
         tags, size, status, banks, redactions, content) in rows:
        s = sessions.get(source)
        if s is None:
            s = sessions[source] = {"id": session, "file": source, "project": project, "start": _iso(started),
                                    "end": _iso(ended), "banks": [], "routes": [], "bytes": 0, "chunks": []}
        s["bytes"] += int(size or 0)
        for bank in banks:
            if bank is not None and bank not in s["banks"]:
                s["banks"].append(bank)
        if route not in s["routes"]:
            s["routes"].append(route)
        s["chunks"].append({"seg": segment, "i": index, "first": first, "last": last, "route": route,
                            "conf": confidence, "reason": reason, "skip": skip, "tags": list(tags or []),
                            "status": status, "banks": [b for b in banks if b is not None], "bytes": size,
                            "red": dict(redactions or {}), "content": content})
    return list(sessions.values())
