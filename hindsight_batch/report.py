"""Summaries from the ledger: runs, and for one run its routes, banks, skip reasons and redactions."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hindsight_batch.errors import UsageError
from hindsight_batch.routing.strategy import reason_without_mode
from hindsight_batch.sinks.ledger import Ledger


def build_report(ledger: Ledger, run_id: str | None = None, last_runs: int = 10) -> dict[str, Any]:
    db = ledger.db
    runs = db.execute(
        "SELECT run_id, command, mode, started_at, finished_at, status FROM runs ORDER BY started_at DESC LIMIT ?",
        [last_runs],
    ).fetchall()
    if run_id is not None and not db.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone():
        raise UsageError(f"--run {run_id}: no such run in the ledger {ledger.path}")
    run_id = run_id or (runs[0][0] if runs else None)
    rows = [json.loads(r[0]) for r in db.execute('SELECT "row" FROM manifest WHERE run_id = ?', [run_id]).fetchall()]
    redactions: Counter[str] = Counter()
    routes: Counter[str] = Counter()
    skips: Counter[str] = Counter()
    banks: Counter[str] = Counter()
    chunks: set[tuple[str, str, int]] = set()
    for row in rows:
        key = (row["source_file"], row["segment"], row["chunk_index"])
        if key not in chunks:
            chunks.add(key)
            routes[row["decision"]["route"]] += 1
            redactions.update(row.get("redactions") or {})
            if row["status"] == "skipped":
                skips[reason_without_mode(row["decision"]["reason"])] += 1
        if row.get("bank_id"):
            banks[row["bank_id"]] += 1
    documents = dict(db.execute("SELECT status, count(*) FROM documents GROUP BY status").fetchall())
    failed = db.execute("SELECT path, line, reason FROM failed_files WHERE run_id = ? ORDER BY path",
                        [run_id]).fetchall()
    return {
        "runs": [
            {"run_id": r[0], "command": r[1], "mode": r[2], "started_at": str(r[3]), "finished_at": str(r[4]),
             "status": r[5]}
            for r in runs
        ],
        "run_id": run_id,
        "chunks": len(chunks),
        "by_route": dict(routes.most_common()),
        "by_bank": dict(banks.most_common()),
        "skipped_by_reason": dict(skips.most_common()),
        "redactions_by_rule": dict(redactions.most_common()),
        "documents_by_status": documents,
        "forgotten": ledger.forgotten(run_id) if run_id else {},  # what `forget --run` removed of this run
        "failed_files": [{"file": f[0], "line": f[1], "reason": f[2]} for f in failed],
    }
