"""What an import holds in memory on a session of many short messages, and that holding less loses nothing.

Such a session costs memory in proportion to its entries and chunks (the reader's index, then the plan's rows). The
import lets the index go once the chunks are planned, encodes the rows one at a time (letting each go), and loads
the ledger in slices; the reader shares each entry's id with the next entry's parent.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import duckdb
import pytest

from hindsight_batch import ImportOptions, run_import
from hindsight_batch.ledger import manifest as ledger
from tests.conftest import SessionBuilder, read_manifest


def short_messages(folder: Path, pairs: int) -> Path:
    b = SessionBuilder(session_id="short")
    for _ in range(pairs):
        b.user("ok")
        b.assistant("done")
    folder.mkdir()
    return b.write(folder / "short.jsonl")


def test_an_import_of_many_short_messages_needs_under_a_kilobyte_an_entry(tmp_path: Path) -> None:
    """The peak of what Python holds (tracemalloc) while importing 20,000 two-word messages, 834 chunks: 1,223 bytes
    an entry before (the index, the rows and all their JSON forms at once, in the file's last step), 949 now (pure
    Python): the index and the rows of the plan are the peak. Keeping the index past planning and the old
    encoding of all rows at once, or an entry's parent id as a string of its own, each goes over the bound."""
    warm = tmp_path / "warm"  # the modules the import loads on first use, loaded before measuring
    short_messages(warm, 1)
    run_import(ImportOptions(paths=[warm], state_dir=tmp_path / "state0", live_retained="include"))
    sessions = tmp_path / "sessions"
    short_messages(sessions, 10_000)
    gc.collect()
    tracemalloc.start()
    try:
        result = run_import(ImportOptions(paths=[sessions], manifest=tmp_path / "plan.jsonl",
                                          state_dir=tmp_path / "state", live_retained="include"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok and result.summary.entries == 20_000 and result.chunks > 800
    assert peak / 20_000 < 980, peak / 20_000


def test_the_ledger_loads_rows_in_slices_and_keeps_each_one_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """A session's rows reach the ledger in slices of ``LOAD_ROWS`` (here 7, so that the 43 chunks end mid-slice):
    the ledger holds every row of the manifest exactly once, and a re-run reuses them as they were."""
    monkeypatch.setattr(ledger, "LOAD_ROWS", 7)
    sessions = tmp_path / "sessions"
    short_messages(sessions, 43 * 12)  # twelve pairs a chunk
    first = tmp_path / "first.jsonl"
    result = run_import(ImportOptions(paths=[sessions], manifest=first, state_dir=tmp_path / "state",
                                      live_retained="include"))
    rows = read_manifest(first)
    assert result.chunks == len(rows) == 43
    with duckdb.connect(str(tmp_path / "state" / "ledger.duckdb"), read_only=True) as db:
        held = db.execute("SELECT document_id, count(*) FROM manifest GROUP BY 1 ORDER BY 1").fetchall()
    assert held == sorted((row["document_id"], 1) for row in rows)
    again = tmp_path / "again.jsonl"
    reused = run_import(ImportOptions(paths=[sessions], manifest=again, state_dir=tmp_path / "state",
                                      live_retained="include"))
    assert reused.summary.unchanged_files == 1

    def without_run(lines: list[dict[str, object]]) -> list[str]:
        return [json.dumps({k: v for k, v in row.items() if k != "run_id"}, sort_keys=True) for row in lines]

    assert without_run(read_manifest(again)) == without_run(rows)
