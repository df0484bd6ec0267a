"""Summaries from the ledger: runs, and for one run its routes, banks, skip reasons and redactions (counted by
DuckDB: :meth:`Ledger.manifest_counts`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hindsight_batch.errors import UsageError
from hindsight_batch.ledger import Ledger, ManifestCounts
from hindsight_batch.routing.strategy import reason_without_mode


def skipped_by_reason(counts: ManifestCounts) -> dict[str, int]:
    """Skipped chunks by ``skip_reason``; rows written before it existed (a ledger migrated from schema version
    1) have none and are grouped by their decision's reason without its ``<mode> mode: `` prefix, as then."""
    skips: Counter[str] = Counter()
    for code, reason, chunks in counts.skips:  # in the order first written: ties keep it
        skips[code if code is not None else reason_without_mode(reason)] += chunks
    return dict(skips.most_common())


def build_report(ledger: Ledger, run_id: str | None = None, last_runs: int = 10) -> dict[str, Any]:
    runs = ledger.runs(last_runs)
    if run_id is not None and not ledger.has_run(run_id):
        raise UsageError(f"--run {run_id}: no such run in the ledger {ledger.path}")
    run_id = run_id or (runs[0].run_id if runs else None)
    counts = ledger.manifest_counts(run_id) if run_id else ManifestCounts(0, [], [], [], [])
    return {
        "runs": [
            {"run_id": r.run_id, "command": r.command, "mode": r.mode, "started_at": str(r.started_at),
             "finished_at": str(r.finished_at), "status": r.status}
            for r in runs
        ],
        "run_id": run_id,
        "chunks": counts.chunks,
        "by_route": dict(counts.routes),
        "by_bank": dict(counts.banks),
        "skipped_by_reason": skipped_by_reason(counts),
        "redactions_by_rule": dict(counts.redactions),
        "documents_by_status": ledger.documents_by_status(),
        "forgotten": ledger.forgotten(run_id) if run_id else {},  # what `forget --run` removed of this run
        "failed_files": [{"file": f.file, "line": f.line, "reason": f.reason}
                         for f in (ledger.failed_files(run_id) if run_id else [])],
    }
