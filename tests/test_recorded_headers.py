"""A re-run takes an unchanged source's session header from the ledger (``sources.header``) instead of opening the
file: a catch-up run over thousands of unchanged sessions then opens none of them. "Unchanged" is the test by which
the source's rows are reused unread: the size and modification time recorded. Anything else is peeked at, and a
header the ledger cannot give back (none recorded, damaged) is peeked at and recorded again."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight_batch.importing import selection
from hindsight_batch.ledger import Ledger
from hindsight_batch.ledger.schema import SCHEMA_VERSION
from hindsight_batch.plan.rows import SourceRecord
from hindsight_batch.session.model import SessionHeader, header_from_text, header_text
from tests.conftest import SessionBuilder, invoke, read_manifest, without_run_id


def _sessions(folder: Path, count: int = 3) -> list[Path]:
    paths = []
    for index in range(count):
        b = SessionBuilder(cwd=f"/work/proj{index % 2}", session_id=f"0196f000-0000-7000-8000-00000000060{index}")
        b.user(f"How does part {index} of the reader work?")
        b.assistant(f"Part {index} reads lines in blocks.")
        paths.append(b.write(folder / f"s{index}.jsonl"))
    return paths


@pytest.fixture
def peeks(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files the importer opens to read a header, in order."""
    opened: list[Path] = []
    real: Callable[[Path], Any] = selection.peek_header

    def counting(path: Path) -> Any:
        opened.append(path)
        return real(path)

    monkeypatch.setattr(selection, "peek_header", counting)
    return opened


def _import(runner: CliRunner, tmp_path: Path, folder: Path, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    manifest = tmp_path / name
    result = invoke(runner, "import", str(folder), "--state", str(tmp_path / "state"), "--manifest", str(manifest),
                    "--json", "-q")
    assert result.exit_code == 0, result.stderr
    return read_manifest(manifest), json.loads(result.stdout)



def _headers(tmp_path: Path) -> dict[str, str | None]:
    with duckdb.connect(str(tmp_path / "state" / "ledger.duckdb"), read_only=True) as db:
        return dict(db.execute("SELECT path, header FROM sources").fetchall())


def test_a_rerun_over_unchanged_files_opens_none_of_them(
    runner: CliRunner, tmp_path: Path, peeks: list[Path]
) -> None:
    paths = _sessions(tmp_path / "sessions")
    first, _ = _import(runner, tmp_path, tmp_path / "sessions", "a.jsonl")
    assert sorted(peeks) == sorted(paths)
    peeks.clear()
    again, summary = _import(runner, tmp_path, tmp_path / "sessions", "b.jsonl")
    assert peeks == [] and summary["unchanged_files"] == 3 and summary["failed_files"] == []
    assert without_run_id(again) == without_run_id(first)
    assert {r["session_id"] for r in again} == {f"0196f000-0000-7000-8000-00000000060{i}" for i in range(3)}


def test_a_file_whose_size_or_time_changed_is_peeked_at(
    runner: CliRunner, tmp_path: Path, peeks: list[Path]
) -> None:
    """Another session written over a recorded file (same name, same modification time) is read as what it is now:
    its own session id and cwd, not those the ledger recorded."""
    paths = _sessions(tmp_path / "sessions")
    _import(runner, tmp_path, tmp_path / "sessions", "a.jsonl")
    peeks.clear()
    before = paths[0].stat()
    other = SessionBuilder(cwd="/work/elsewhere", session_id="0196f000-0000-7000-8000-000000000699")
    other.user("A different session, with a longer question than the first one had.")
    other.assistant("And its answer.")
    other.write(paths[0])
    os.utime(paths[0], ns=(before.st_atime_ns, before.st_mtime_ns))  # only the size tells it apart
    assert paths[0].stat().st_size != before.st_size
    rows, summary = _import(runner, tmp_path, tmp_path / "sessions", "b.jsonl")
    assert peeks == [paths[0]] and summary["unchanged_files"] == 2
    mine = [r for r in rows if r["source_file"].endswith("s0.jsonl")]
    assert mine and {r["session_id"] for r in mine} == {"0196f000-0000-7000-8000-000000000699"}
    assert {r["project"] for r in mine} == {"elsewhere"}


@pytest.mark.parametrize("damaged", [
    None, "", "{", "[]", "null", '"text"', '{"id": "x"}',
    '{"id": 5, "version": 3, "timestamp": null, "cwd": "/w", "parent_session": null}',
    '{"id": "x", "version": 9, "timestamp": null, "cwd": "/w", "parent_session": null}',
    '{"id": "x", "version": true, "timestamp": null, "cwd": "/w", "parent_session": null}',
    '{"id": "x", "version": 3, "timestamp": null, "cwd": "", "parent_session": null}',
    '{"id": "x", "version": 3, "timestamp": null, "cwd": ["/w"], "parent_session": null}',
    '{"id": "", "version": 3, "timestamp": null, "cwd": "/w", "parent_session": null}',
    '{"id": "x", "version": 3, "timestamp": null, "cwd": "/w", "parent_session": null, "more": 1}',
    "[" * 100_000,
])
def test_a_header_the_ledger_cannot_give_back_is_peeked_at_and_recorded_again(
    runner: CliRunner, tmp_path: Path, peeks: list[Path], damaged: str | None
) -> None:
    paths = _sessions(tmp_path / "sessions", 2)
    first, _ = _import(runner, tmp_path, tmp_path / "sessions", "a.jsonl")
    recorded = _headers(tmp_path)
    with duckdb.connect(str(tmp_path / "state" / "ledger.duckdb")) as db:
        db.execute("UPDATE sources SET header = ?", [damaged])
    peeks.clear()
    again, summary = _import(runner, tmp_path, tmp_path / "sessions", "b.jsonl")
    assert sorted(peeks) == sorted(paths) and summary["unchanged_files"] == 2 and summary["failed_files"] == []
    assert without_run_id(again) == without_run_id(first)
    assert _headers(tmp_path) == recorded  # recorded again: the next run opens nothing
    peeks.clear()
    _import(runner, tmp_path, tmp_path / "sessions", "c.jsonl")
    assert peeks == []


def test_a_version_2_ledger_gains_headers_as_its_sources_are_reused(
    runner: CliRunner, tmp_path: Path, peeks: list[Path]
) -> None:
    paths = _sessions(tmp_path / "sessions")
    first, _ = _import(runner, tmp_path, tmp_path / "sessions", "a.jsonl")
    ledger = tmp_path / "state" / "ledger.duckdb"
    with duckdb.connect(str(ledger)) as db:  # the ledger as version 2 left it
        db.execute("ALTER TABLE sources DROP COLUMN header")
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    peeks.clear()
    again, summary = _import(runner, tmp_path, tmp_path / "sessions", "b.jsonl")
    assert sorted(peeks) == sorted(paths) and summary["unchanged_files"] == 3
    assert without_run_id(again) == without_run_id(first)
    with duckdb.connect(str(ledger), read_only=True) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    with duckdb.connect(str(ledger.with_name("ledger.v2.duckdb")), read_only=True) as db:  # kept for version 2
        assert "header" not in [r[0] for r in db.execute("DESCRIBE sources").fetchall()]
    assert all(_headers(tmp_path).values())
    peeks.clear()
    _import(runner, tmp_path, tmp_path / "sessions", "c.jsonl")
    assert peeks == []


# Header fields as a session file may hold them: any text, lone surrogates included (the standard library's
# parser gives them back from a JavaScript-written escape); a cwd is never empty (the reader makes it None).
_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=30)
HEADERS = st.builds(SessionHeader, id=_TEXT.filter(bool), version=st.sampled_from([1, 2, 3]),
                    timestamp=st.none() | _TEXT, cwd=st.none() | _TEXT.filter(bool), parent_session=st.none() | _TEXT)


@settings(max_examples=300, deadline=None)
@given(header=HEADERS)
def test_a_header_comes_back_from_its_text_as_it_went_in(header: SessionHeader) -> None:
    text = header_text(header)
    assert text.isascii() and header_from_text(text) == header


@settings(max_examples=25, deadline=None)
@given(headers=st.lists(HEADERS, min_size=1, max_size=40))
def test_a_header_comes_back_from_the_ledger_as_it_went_in(tmp_path_factory: pytest.TempPathFactory,
                                                            headers: list[SessionHeader]) -> None:
    """Through DuckDB too, whose text columns hold UTF-8 only: a lone surrogate is kept as its escape."""
    with Ledger(tmp_path_factory.mktemp("ledger")) as ledger:
        # (the id column as the reader gives it: it replaces a lone surrogate, which no UTF-8 column holds)
        ledger.record_sources([SourceRecord(f"/s{i}.jsonl", 1, 1, f"id{i}", "h", "r", None, header_text(h))
                               for i, h in enumerate(headers)])
        known = ledger.sources()
    assert [header_from_text(known[f"/s{i}.jsonl"].header) for i in range(len(headers))] == headers


@settings(max_examples=1500, deadline=None)
@given(text=st.one_of(
    st.text(max_size=200),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                 lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=15), inner, max_size=6),
                 max_leaves=12).map(json.dumps),
    st.fixed_dictionaries({k: st.none() | st.integers(-1, 4) | st.booleans() | st.text(max_size=5) | st.floats()
                           for k in ("id", "version", "timestamp", "cwd", "parent_session")}).map(json.dumps),
))
def test_any_text_in_the_ledger_gives_a_valid_header_or_none(text: str) -> None:
    """Whatever the column holds (a damaged or hand-edited ledger), the answer is a header the reader could have
    made, or None (then the file is peeked at); never an exception."""
    header = header_from_text(text)
    if header is not None:
        assert isinstance(header.id, str) and header.id and header.version in (1, 2, 3)
        assert header.cwd is None or (isinstance(header.cwd, str) and header.cwd)
        assert all(v is None or isinstance(v, str) for v in (header.timestamp, header.parent_session))
        assert header_from_text(header_text(header)) == header
