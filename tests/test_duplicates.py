"""A session file the ledger knows under another spelling (a symlinked folder, a symlink to the file, a relative
path, as older versions recorded them) is the same file: its session is not reported as a copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hindsight_batch.ledger import Ledger
from tests.conftest import SessionBuilder, invoke


def dry_run(runner: CliRunner, folder: Path, state: Path) -> dict[str, object]:
    result = invoke(runner, "import", str(folder), "--state", str(state), "--json", "-q",
                    "--live-retained", "include")
    assert result.exit_code == 0, result.stderr
    summary: dict[str, object] = json.loads(result.stdout)
    return summary


@pytest.mark.parametrize("spelling", ["folder-link", "file-link", "relative"])
def test_a_source_known_under_another_spelling_is_not_a_copy(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    b = SessionBuilder(session_id="one-session")
    b.user("the importer decided on one ledger row per file")
    folder = tmp_path / "real"
    path = b.write(folder / "--p--" / "s.jsonl")
    (tmp_path / "linked").symlink_to(folder / "--p--")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "link.jsonl").symlink_to(path)
    monkeypatch.chdir(tmp_path)
    known = {"folder-link": str(tmp_path / "linked" / "s.jsonl"), "file-link": str(tmp_path / "other" / "link.jsonl"),
             "relative": "real/--p--/../--p--/s.jsonl"}[spelling]
    state = tmp_path / "state"
    assert dry_run(runner, folder, state)["sessions"] == 1
    with Ledger(state) as ledger:
        ledger.db.execute("UPDATE sources SET path = ?", [known])
    again = dry_run(runner, folder, state)
    assert again["duplicate_sessions"] == [] and again["sessions"] == 1
    # A real copy beside it is still one.
    copy = b.write(folder / "--p--" / "t.jsonl")
    third = dry_run(runner, folder, state)
    assert third["duplicate_sessions"] == [{"file": str(copy.resolve()), "same_session_as": str(path.resolve())}]
