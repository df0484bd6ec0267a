"""Session files whose names are not UTF-8 (a Linux name is bytes: a folder copied from an old Latin-1 machine, a
file renamed by hand). Each is imported like any other, named with ``\\xNN`` for each such byte in the manifest,
the ledger, the summary and the upload; a re-run reuses it; a review of it applies. Before, each such file failed
by name on every run ("surrogates not allowed") and was never imported."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from hindsight_batch.session.names import node_path, source_name, source_path
from tests.conftest import SessionBuilder, invoke, read_manifest
from tests.fake_hindsight import FakeState, fake_hindsight

BANK = "names-bank"
# (bytes of the name, the name this tool writes): Latin-1, bytes no encoding gives, a folder and a file.
NAMES = (
    (b"caf\xe9.jsonl", "caf\\xe9.jsonl"),
    (b"\xff\xfe-r\xc3\xa9sum\xc3\xa9.jsonl", "\\xff\\xfe-résumé.jsonl"),
    (b"d\xe9j\xe0/s.jsonl", "d\\xe9j\\xe0/s.jsonl"),
)


def byte_named(folder: Path, raw: bytes) -> Path:
    """``folder/raw``: a path whose name is the bytes ``raw``."""
    return Path(os.fsdecode(os.fsencode(folder) + b"/" + raw))


def write_or_skip(builder: SessionBuilder, path: Path) -> Path:
    try:
        return builder.write(path)
    except (UnicodeEncodeError, OSError) as exc:  # a file system that takes only UTF-8 names (not Linux's)
        pytest.skip(f"this file system refuses bytes that are not UTF-8 in a name: {exc}")


def corpus(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """One session per name, plus one plainly named; returns the folder and session id -> expected name."""
    folder = tmp_path / "sessions"
    expected = {}
    for index, (raw, shown) in enumerate([*NAMES, (b"plain.jsonl", "plain.jsonl")]):
        session_id = f"0196f000-0000-7000-8000-0000000007{index:02d}"
        b = SessionBuilder(cwd="/work/names", session_id=session_id)
        b.user(f"Session {index}: we decided to implement the parser as a streaming reader.")
        b.assistant("noted, implemented")
        write_or_skip(b, byte_named(folder, raw))
        expected[session_id] = f"{folder}/{shown}"
    return folder, expected


@pytest.fixture
def names_corpus(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    return corpus(tmp_path)


def run(runner: CliRunner, folder: Path, tmp_path: Path, *args: str, url: str = "http://127.0.0.1:9"
        ) -> tuple[Any, dict[str, Any]]:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"baseUrl": url, "import": {"turnsPerChunk": 1},
                                  "banks": {"project": {"bankId": BANK}}}))
    result = invoke(runner, "import", str(folder), "--json", "-q", "--config", str(config),
                    "--state", str(tmp_path / "state"), "--live-retained", "include", *args)
    return result, json.loads(result.stdout) if result.stdout.strip() else {}


def test_a_file_whose_name_is_not_utf8_is_imported_under_an_escaped_name(
    runner: CliRunner, tmp_path: Path, names_corpus: tuple[Path, dict[str, str]]
) -> None:
    folder, expected = names_corpus
    manifest = tmp_path / "m.jsonl"
    result, summary = run(runner, folder, tmp_path, "--manifest", str(manifest))
    assert result.exit_code == 0, result.stderr
    assert summary["failed_files"] == [] and summary["sessions"] == len(expected)
    rows = read_manifest(manifest)  # read as UTF-8: the file holds no lone surrogate
    assert {row["session_id"]: row["source_file"] for row in rows} == expected
    with duckdb.connect(str(tmp_path / "state" / "ledger.duckdb"), read_only=True) as db:
        sources = {r[0] for r in db.execute("SELECT path FROM sources").fetchall()}
    assert sources == set(expected.values())

    again = tmp_path / "again.jsonl"  # S4: a re-run reuses every one of them, sends and plans nothing anew
    result, summary = run(runner, folder, tmp_path, "--manifest", str(again))
    assert result.exit_code == 0, result.stderr
    assert summary["unchanged_files"] == len(expected) and summary["failed_files"] == []
    assert [{**r, "run_id": ""} for r in read_manifest(again)] == [{**r, "run_id": ""} for r in rows]


def test_a_review_of_such_files_applies_and_the_server_holds_them(
    runner: CliRunner, tmp_path: Path, names_corpus: tuple[Path, dict[str, str]]
) -> None:
    folder, expected = names_corpus
    fake = FakeState()
    with fake_hindsight(fake) as url:
        manifest = tmp_path / "plan.jsonl"
        result, summary = run(runner, folder, tmp_path, "--manifest", str(manifest), url=url)
        assert result.exit_code == 0, result.stderr
        planned = {r["document_id"] for r in read_manifest(manifest) if r["document_id"]}
        assert len(planned) == len(expected)
        common = ("--config", str(tmp_path / "config.json"), "--state", str(tmp_path / "state"),
                  "--live-retained", "include", "--json")
        applied = invoke(runner, "import", "--apply", "--from-run", summary["run_id"], *common)
        given = invoke(runner, "import", "--apply", "--from-run", summary["run_id"], str(folder), *common)
        # The live check (the default) asks the server for each file's live document, named by a hash of its path.
        live = invoke(runner, "import", str(folder), "--json", "-q", "--config", str(tmp_path / "config.json"),
                      "--state", str(tmp_path / "state-live"))
    assert applied.exit_code == 0, applied.stderr
    data = json.loads(applied.stdout)["from_run"]
    assert data["refused_total"] == 0 and data["sessions_sent"] == len(expected)
    assert set(fake.held(BANK)) == planned
    sent = {doc["document_metadata"]["source_file"] for doc in fake.documents[BANK].values()}
    assert sent == set(expected.values())
    assert live.exit_code == 0, live.stderr
    assert json.loads(live.stdout)["failed_files"] == []
    assert given.exit_code == 0, given.stderr  # the same review, the folder given: all of it on the server already
    again = json.loads(given.stdout)["from_run"]
    assert again["refused_total"] == 0 and again["items_already_on_server"] == len(planned)


def test_a_copy_under_such_a_name_is_the_same_session_named_as_written(
    runner: CliRunner, tmp_path: Path
) -> None:
    folder = tmp_path / "sessions"
    b = SessionBuilder(cwd="/work/names", session_id="0196f000-0000-7000-8000-000000000799")
    b.user("we decided to implement the reader")
    b.assistant("done")
    b.write(folder / "a.jsonl")
    write_or_skip(b, byte_named(folder, b"b\xe9.jsonl"))
    result, summary = run(runner, folder, tmp_path)
    assert result.exit_code == 0, result.stderr
    assert summary["duplicate_sessions"] == [{"file": f"{folder}/b\\xe9.jsonl", "same_session_as": f"{folder}/a.jsonl"}]


def test_names_round_trip_for_any_bytes(tmp_path: Path) -> None:
    """Every name is UTF-8 text; it leads back to its file; a name is stable (naming its file again gives it)."""
    rng = random.Random(2811)
    alphabet = [bytes([b]) for b in range(1, 256) if b != ord("/")] + [b"\\x", b"\\xe9", "é".encode(), b"\xed\xa0\x80"]
    for _ in range(300):
        raw = b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        path = byte_named(tmp_path, raw.replace(b"\x00", b""))
        try:
            path.write_bytes(b"")
        except OSError:  # "." or ".." or too long: not a file name
            continue
        name = source_name(path)
        name.encode("utf-8")  # raises on a lone surrogate
        assert node_path(path).encode("utf-8")
        assert Path(source_path(name)) == path, (raw, name)
        assert source_name(source_path(name)) == name
        try:
            os.fsencode(path).decode("utf-8")
            assert name == str(path)  # a UTF-8 name is written as it is
        except UnicodeDecodeError:
            assert "\\x" in name
        path.unlink()


def test_prune_names_such_a_file_as_the_import_does_and_prunes_it(runner: CliRunner, tmp_path: Path) -> None:
    b = SessionBuilder(cwd="/work/names", session_id="0196f000-0000-7000-8000-000000000798")
    b.user("we decided to implement the reader")
    b.entry("custom_message", customType="hindsight-recall", content="<hindsight_memories>x</hindsight_memories>",
            display=False)
    b.assistant("done")
    path = write_or_skip(b, byte_named(tmp_path, b"caf\xe9.jsonl"))
    old = path.stat().st_mtime - 3600
    os.utime(path, (old, old))
    result = invoke(runner, "prune-recall-messages", str(path), "--confirm", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)["files"][0]
    assert report["status"] == "pruned" and report["file"] == f"{tmp_path}/caf\\xe9.jsonl"
    assert report["backup"].startswith(f"{tmp_path}/caf\\xe9.jsonl.hindsight-prune-")
    assert Path(source_path(report["backup"])).is_file()  # the name leads to the backup
    assert b"hindsight-recall" not in path.read_bytes()
