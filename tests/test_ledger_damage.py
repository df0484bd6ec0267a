"""The ledger gives a re-run each unchanged source's manifest rows; users query it with SQL, and may edit it. A row
it cannot give back whole (text that is not JSON, a decision that is not one, a missing status) makes that source be
read again, which records its rows anew; it never makes the file fail on every run, nor goes into the manifest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight_batch.ledger import manifest_table
from tests.conftest import SessionBuilder, invoke, read_manifest, without_run_id


def _sessions(folder: Path) -> list[Path]:
    paths = []
    for index in range(3):
        b = SessionBuilder(cwd=f"/work/dmg{index}", session_id=f"0196f000-0000-7000-8000-00000000070{index}")
        b.user(f"Where does part {index} keep its state? We decided to use the ledger.")
        b.assistant(f"Part {index} keeps it in the ledger, one row per source.")
        paths.append(b.write(folder / f"s{index}.jsonl"))
    return paths


def _import(runner: CliRunner, state: Path, folder: Path, manifest: Path) -> dict[str, Any]:
    result = invoke(runner, "import", str(folder), "--state", str(state), "--manifest", str(manifest), "--json", "-q")
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary



def _damage(state: Path, source: Path, assignment: str, value: Any = None) -> None:
    with duckdb.connect(str(state / "ledger.duckdb")) as db:
        db.execute(f"UPDATE manifest SET {assignment} WHERE source_file = ?",
                   [source.resolve().as_posix()] if value is None else [value, source.resolve().as_posix()])


@pytest.mark.parametrize("assignment", [
    "decision = '{broken'", "decision = '[]'", "decision = '{}'", "decision = '\"route\"'",
    """decision = '{"route": 5, "reason": null}'""", "annotations = 'not json'", "annotations = '[1]'",
    "observation_scopes = '{'", "status = NULL", "segment = NULL", "chunk_index = NULL",
])
def test_a_row_the_ledger_cannot_give_back_makes_its_source_be_read_again(
    runner: CliRunner, tmp_path: Path, assignment: str
) -> None:
    paths = _sessions(tmp_path / "sessions")
    state = tmp_path / "state"
    _import(runner, state, tmp_path / "sessions", tmp_path / "a.jsonl")
    _damage(state, paths[1], assignment)
    summary = _import(runner, state, tmp_path / "sessions", tmp_path / "b.jsonl")
    assert summary["failed_files"] == [] and summary["unchanged_files"] == 2 and summary["entries"] > 0
    assert without_run_id(read_manifest(tmp_path / "b.jsonl")) == without_run_id(read_manifest(tmp_path / "a.jsonl"))
    again = _import(runner, state, tmp_path / "sessions", tmp_path / "c.jsonl")  # its rows recorded anew
    assert again["unchanged_files"] == 3 and again["entries"] == 0


_TEXT_COLUMNS = ("decision", "observation_scopes", "annotations")
_NULLABLE = tuple(name for name in manifest_table.NAMES if name not in ("run_id", "source_file"))


@pytest.fixture(scope="module")
def first_import() -> dict[str, Any]:
    """The sessions and the state of their first import, made by the first example (inside its private HOME):
    each example damages a copy of that state, the same ledger a first import of its own would make (the
    sessions are only read)."""
    return {}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.one_of(
    st.tuples(st.sampled_from(_TEXT_COLUMNS), st.one_of(
        st.text(max_size=40),
        st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=4),
                     max_leaves=8).map(json.dumps))),
    st.tuples(st.sampled_from(_NULLABLE), st.none()),
))
def test_any_damage_to_a_row_leaves_the_re_run_whole(
    runner: CliRunner, tmp_path_factory: pytest.TempPathFactory, first_import: dict[str, Any],
    damage: tuple[str, str | None]
) -> None:
    """Whatever one column of a source's rows was set to by hand, the re-run exits 0, fails no file, and writes a
    manifest with every source's rows."""
    if not first_import:
        base = tmp_path_factory.mktemp("imported")
        first_import["paths"] = _sessions(base / "sessions")
        _import(runner, base / "state", base / "sessions", base / "a.jsonl")
        first_import["state"] = base / "state"
    paths: list[Path] = first_import["paths"]
    tmp_path = tmp_path_factory.mktemp("damage")
    state = tmp_path / "state"
    shutil.copytree(first_import["state"], state)
    column, value = damage
    if value is None:
        _damage(state, paths[0], f"{column} = NULL")
    else:
        _damage(state, paths[0], f"{column} = ?", value)
    summary = _import(runner, state, paths[0].parent, tmp_path / "b.jsonl")
    assert summary["failed_files"] == []
    rows = read_manifest(tmp_path / "b.jsonl")
    assert {r["source_file"] for r in rows} == {p.resolve().as_posix() for p in paths}
    assert all(isinstance(r["status"], str) and isinstance(r["decision"], dict) for r in rows)
