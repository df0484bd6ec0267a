"""Review of issue 41: a reused source whose bytes cannot be hashed (for --from-run) after it was counted.

Before the split (1b3c5ad) its rows still reached the manifest and the summary's tallies, as its ``unchanged_files``
count says; after it, the source is counted unchanged but its rows are gone from the manifest and the statuses.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hindsight_batch import ImportOptions, run_import
from hindsight_batch.importing import selection
from hindsight_batch.ledger.state import open_ledger
from tests.conftest import SAMPLES, read_manifest


def test_a_source_counted_unchanged_keeps_its_rows_when_hashing_it_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sessions = Path(shutil.copytree(SAMPLES / "--home-dev-acme-api--", tmp_path / "sessions"))
    state = tmp_path / "state"
    first = run_import(ImportOptions(paths=[sessions], state_dir=state, live_retained="include"))
    with open_ledger(state) as ledger:  # a source recorded without its bytes' hash (an older ledger)
        ledger.db.execute("UPDATE sources SET sha256 = NULL")
    victim = sorted(sessions.glob("*.jsonl"))[0]
    real = selection.file_sha256

    def unreadable(path: Path) -> str:
        if Path(path) == victim:
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(selection, "file_sha256", unreadable)
    again = run_import(ImportOptions(paths=[sessions], state_dir=state, live_retained="include",
                                     manifest=tmp_path / "m.jsonl"))
    rows = read_manifest(tmp_path / "m.jsonl")
    assert again.summary.unchanged_files == 3 and again.failed_files == 1
    assert again.statuses == first.statuses  # as before the split: the counted source's rows are tallied
    assert any(row["source_file"] == str(victim) for row in rows)
