"""report, verify and review look at past runs: on a state folder that holds none (empty, mistyped, never used)
they say so, exit 2, and create nothing; report reads a ledger in a folder it cannot write to."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from hindsight_batch.ledger import Ledger
from tests.conftest import invoke, small_sessions

COMMANDS = [["report"], ["report", "--json"], ["verify"], ["review"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("state", ["mistyped", "empty folder", "ledger without runs"])
def test_a_state_folder_with_no_runs_is_said_exit_2_and_nothing_is_created(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], state: str
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / ("sttae" if state == "mistyped" else "state")
    if state == "empty folder":
        folder.mkdir()
    if state == "ledger without runs":
        Ledger(folder).close()
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    result = invoke(runner, *command, "--state", str(folder))
    assert result.exit_code == 2, result.output + result.stderr
    assert f"no runs in ledger {folder / 'ledger.duckdb'}" in result.stderr and "Traceback" not in result.stderr
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before
    if "--json" in command:
        assert json.loads(result.stdout)["error"]["code"] == 2


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` as a folder no one may write to: a read-only bind mount as root (whom modes do not stop), its
    mode otherwise."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    bound = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True, check=False)
    if bound.returncode != 0:
        pytest.skip("cannot bind-mount here")
    try:
        remounted = subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], capture_output=True, check=False)
        if remounted.returncode != 0:
            pytest.skip("cannot remount read-only here")
        yield
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


@pytest.mark.parametrize("lock_file", [True, False])
def test_report_reads_a_ledger_in_a_folder_it_cannot_write_to(
    runner: CliRunner, tmp_path: Path, lock_file: bool
) -> None:
    state = tmp_path / "state"
    imported = invoke(runner, "import", str(small_sessions(tmp_path / "s", "ro")), "--state", str(state), "-q")
    assert imported.exit_code == 0, imported.stderr
    if not lock_file:
        (state / "ledger.lock").unlink()
    expected = json.loads(invoke(runner, "report", "--state", str(state), "--json").stdout)
    files = sorted(p.name for p in state.iterdir())
    with read_only(state):
        result = invoke(runner, "report", "--state", str(state), "--json")
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout) == expected and expected["chunks"] == 3
        human = invoke(runner, "report", "--state", str(state))
        assert human.exit_code == 0 and "chunk(s)" in human.output
        assert sorted(p.name for p in state.iterdir()) == files
