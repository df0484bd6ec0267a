"""The ledger's schema: a ledger made by the version before schema versions (1) is migrated when opened, and
report, a re-run's reuse and verify work on it; a ledger newer than this code is refused untouched; manifest rows
round-trip through their columns; report's counts come from the columns."""

from __future__ import annotations

import hashlib
import json
import stat
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from hindsight_batch.ledger import Ledger, LedgerPathError
from hindsight_batch.ledger.schema import SCHEMA_VERSION
from hindsight_batch.plan.rows import ManifestRow, ManifestRowJson
from hindsight_batch.routing.strategy import reason_without_mode
from tests.conftest import SessionBuilder, invoke, read_manifest, without_run_id
from tests.fake_hindsight import FakeState, fake_hindsight

# Version 1 of the ledger, as the code before schema versions made it (frozen here: the test must not follow the
# code). Its manifest kept each row as one JSON string; sources had parsed_offset.
V1_DDL = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, command VARCHAR, mode VARCHAR, started_at TIMESTAMP, finished_at TIMESTAMP,
    status VARCHAR, summary VARCHAR);
CREATE TABLE IF NOT EXISTS sources (
    path VARCHAR PRIMARY KEY, size BIGINT, mtime_ns BIGINT, parsed_offset BIGINT, session_id VARCHAR,
    settings_hash VARCHAR, last_run_id VARCHAR, seen_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS documents (
    bank_id VARCHAR, document_id VARCHAR, bank_role VARCHAR, source_path VARCHAR, session_id VARCHAR,
    content_hash VARCHAR, item_hash VARCHAR, status VARCHAR, operation_id VARCHAR, error VARCHAR,
    run_id VARCHAR, updated_at TIMESTAMP, tags VARCHAR, metadata VARCHAR, PRIMARY KEY (bank_id, document_id));
ALTER TABLE documents ADD COLUMN IF NOT EXISTS retryable BOOLEAN;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS attempt INTEGER;
CREATE TABLE IF NOT EXISTS deliveries (
    run_id VARCHAR, bank_id VARCHAR, document_id VARCHAR, item_hash VARCHAR, sent_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS forgotten (
    run_id VARCHAR, bank_id VARCHAR, document_id VARCHAR, action VARCHAR, by_run VARCHAR, done_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS manifest (
    run_id VARCHAR, source_path VARCHAR, document_id VARCHAR, bank_id VARCHAR, route VARCHAR, status VARCHAR,
    reason VARCHAR, "row" VARCHAR);
CREATE TABLE IF NOT EXISTS failed_files (run_id VARCHAR, path VARCHAR, line BIGINT, reason VARCHAR);
"""
BANK = "schema-bank"


def sessions(folder: Path) -> Path:
    """Two sessions, one chunk per turn: project work, and screenshots and test output (skipped chunks)."""
    for index, turns in enumerate([
        ["We decided to keep deterministic document ids in the importer; implemented in items.py.",
         "The ledger migration runs in one transaction, we agreed on that for the project."],
        ["Screenshot saved to /var/folders/7x/T/Screen Shot 2026-05-01 at 10.02.11.png",
         "We moved the parser to streaming reads in this repository, decided today.",
         "Screenshot saved to /var/folders/7x/T/Screen Shot 2026-05-01 at 10.03.12.png"],
    ]):
        b = SessionBuilder(cwd="/work/schema", session_id=f"0196f000-0000-7000-8000-00000000050{index}")
        for text in turns:
            b.user(text)
            b.assistant("noted")
        b.write(folder / "--work-schema--" / f"s{index}.jsonl")
    return folder


V2_KEYS = ("project", "started_at", "ended_at", "skip_reason")  # the manifest keys version 2 added


def v1_ledger_like(made: Path, target: Path, manifest: Path) -> None:
    """The version-1 ledger today's code would have left in ``target`` after the run that made ``made`` (a
    current ledger) and wrote ``manifest``: its tables through the frozen DDL, the manifest rows as JSON strings."""
    target.mkdir(parents=True)
    with duckdb.connect(str(target / "ledger.duckdb")) as db:
        db.execute(V1_DDL)
        db.execute(f"ATTACH '{made / 'ledger.duckdb'}' AS made (READ_ONLY)")
        db.execute("INSERT INTO meta SELECT * FROM made.meta WHERE key <> 'schema_version'")
        for table in ("runs", "documents", "deliveries", "forgotten", "failed_files"):
            db.execute(f"INSERT INTO {table} SELECT * FROM made.{table}")
        db.execute("INSERT INTO sources SELECT path, size, mtime_ns, size, session_id, settings_hash, last_run_id, "
                   "seen_at FROM made.sources")
        for row in read_manifest(manifest):
            for key in ("content", *V2_KEYS):  # version 1 rows had no content stored, nor these keys
                row.pop(key, None)
            db.execute("INSERT INTO manifest VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       [row["run_id"], row["source_file"], row.get("document_id"), row.get("bank_id"),
                        row["decision"]["route"], row["status"], row["decision"]["reason"],
                        json.dumps(row, ensure_ascii=False, separators=(",", ":"))])
        db.execute("DETACH made")


def columns(state: Path, table: str) -> list[str]:
    with duckdb.connect(str(state / "ledger.duckdb"), read_only=True) as db:
        return [r[0] for r in db.execute(f"DESCRIBE {table}").fetchall()]



def test_a_version_1_ledger_is_migrated_and_report_reuse_and_verify_work_on_it(
    runner: CliRunner, tmp_path: Path
) -> None:
    folder = sessions(tmp_path / "sessions")
    fake = FakeState()
    current, old = tmp_path / "current", tmp_path / "old"
    with fake_hindsight(fake) as url:
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"baseUrl": url, "import": {"turnsPerChunk": 1},
                                      "banks": {"project": {"bankId": BANK}}}))
        common = ("--config", str(config), "--json", "-q")
        made = invoke(runner, "import", str(folder), "--apply", "--wait", "--state", str(current),
                      "--manifest", str(tmp_path / "applied.jsonl"), *common)
        assert made.exit_code == 0, made.stderr
        applied = read_manifest(tmp_path / "applied.jsonl")
        assert {r["status"] for r in applied} == {"planned", "skipped"}
        v1_ledger_like(current, old, tmp_path / "applied.jsonl")
        assert "row" in columns(old, "manifest") and "parsed_offset" in columns(old, "sources")

        report = invoke(runner, "report", "--state", str(old), "--json")  # opens it: the migration runs
        assert report.exit_code == 0, report.stderr
        with duckdb.connect(str(old / "ledger.duckdb"), read_only=True) as db:
            version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            kept = db.execute("SELECT count(*), count(DISTINCT source_file) FROM manifest").fetchone()
        assert version == (str(SCHEMA_VERSION),) and kept == (len(applied), 2)
        assert "row" not in columns(old, "manifest") and "parsed_offset" not in columns(old, "sources")
        # the ledger as it was is kept beside it (the older hindsight-batch can still use it), private
        kept_copy = old / "ledger.v1.duckdb"
        assert stat.S_IMODE(kept_copy.stat().st_mode) == 0o600
        with duckdb.connect(str(kept_copy), read_only=True) as db:
            assert "row" in [r[0] for r in db.execute("DESCRIBE manifest").fetchall()]
            assert db.execute("SELECT count(*) FROM manifest").fetchone() == (len(applied),)
        assert columns(old, "manifest") == columns(current, "manifest")
        assert columns(old, "sources") == columns(current, "sources")
        assert columns(old, "run_sources") == columns(current, "run_sources")  # what --from-run checks

        # The same counts as the ledger the rows came from; skips by their reason text (no skip_reason in v1).
        data, expected = json.loads(report.stdout), json.loads(invoke(runner, "report", "--state", str(current),
                                                                      "--json").stdout)
        skipped = Counter(reason_without_mode(r["decision"]["reason"]) for r in applied if r["status"] == "skipped")
        assert data["skipped_by_reason"] == dict(skipped.most_common()) and sum(skipped.values()) == 2
        for key in ("runs", "run_id", "chunks", "by_route", "by_bank", "redactions_by_rule", "documents_by_status"):
            assert data[key] == expected[key], key
        assert data["documents_by_status"] == {"confirmed": 3}

        # A re-run reads each source once more (version-1 rows lack the project, times and skip reason) and gives
        # the manifest the current ledger's re-run gives; nothing is sent again.
        rerun = invoke(runner, "import", str(folder), "--state", str(old), "--manifest", str(tmp_path / "old.jsonl"),
                       *common)
        same = invoke(runner, "import", str(folder), "--state", str(current), "--manifest",
                      str(tmp_path / "current.jsonl"), *common)
        assert rerun.exit_code == same.exit_code == 0, rerun.stderr + same.stderr
        summary = json.loads(rerun.stdout)
        assert summary["unchanged_files"] == 0 and summary["sessions"] == 2 and summary["entries"] > 0
        reused = read_manifest(tmp_path / "old.jsonl")
        assert without_run_id(reused) == without_run_id(read_manifest(tmp_path / "current.jsonl"))
        assert without_run_id(reused) == without_run_id(
            [{**r, "status": "unchanged" if r["status"] == "planned" else r["status"]} for r in applied])

        verified = invoke(runner, "verify", "--config", str(config), "--state", str(old), "--json")
    assert verified.exit_code == 0, verified.stdout
    assert json.loads(verified.stdout)["matching"] == 3


def test_a_failed_migration_leaves_the_version_1_ledger_as_it_was(runner: CliRunner, tmp_path: Path) -> None:
    state = tmp_path / "old"
    state.mkdir()
    with duckdb.connect(str(state / "ledger.duckdb")) as db:
        db.execute(V1_DDL)
        db.execute("INSERT INTO sources VALUES ('/s.jsonl', 1, 1, 1, 's', 'h', 'r1', now())")
        db.execute("INSERT INTO manifest VALUES ('r1', '/s.jsonl', NULL, NULL, 'skip', 'skipped', 'x', '{broken')")
    result = invoke(runner, "report", "--state", str(state))
    assert result.exit_code == 2 and str(state / "ledger.duckdb") in result.stderr
    assert "Traceback" not in result.stderr
    assert "row" in columns(state, "manifest") and "parsed_offset" in columns(state, "sources")
    assert "manifest_v2" not in {r[0] for r in duckdb.connect(str(state / "ledger.duckdb"), read_only=True)
                                 .execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert [p.name for p in state.iterdir() if p.name.startswith(".")] == []  # no temporary file left


@pytest.mark.parametrize("value", [str(SCHEMA_VERSION + 1), "soon", "0"])
def test_a_ledger_newer_than_this_code_is_refused_untouched(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    state = tmp_path / "newer"
    with Ledger(state) as ledger:
        ledger.db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [value])
        ledger.db.execute("CHECKPOINT")
    before = hashlib.sha256((state / "ledger.duckdb").read_bytes()).hexdigest()
    folder = tmp_path / "s"
    SessionBuilder().write(folder / "a.jsonl")
    for command in (["report"], ["import", str(folder)], ["verify"]):
        result = invoke(runner, *command, "--state", str(state))
        assert result.exit_code == 2, (command, result.stderr)
        assert str(state / "ledger.duckdb") in result.stderr and "Traceback" not in result.stderr
        newer = f"schema version {SCHEMA_VERSION + 1} is newer"
        assert (newer if value.isdigit() and value != "0" else f"'{value}', not a version number") in result.stderr
    with pytest.raises(LedgerPathError):
        Ledger(state)
    # From the environment, as for any state folder that cannot be used: a configuration error.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    (tmp_path / "hindsight-batch").mkdir()
    (state / "ledger.duckdb").rename(tmp_path / "hindsight-batch" / "ledger.duckdb")
    assert invoke(runner, "report").exit_code == 3
    after = hashlib.sha256((tmp_path / "hindsight-batch" / "ledger.duckdb").read_bytes()).hexdigest()
    assert after == before


def row(run_id: str, source: str, chunk: int, **changes: Any) -> ManifestRow:
    """A manifest row as the importer makes it (without content)."""
    decision = {"route": "project", "confidence": 0.85, "signals": ["project"], "matchedSignals": ["decision"],
                "reason": "explicit-only mode: project work", "mode": "explicit-only", "writes": ["project"],
                "targets": [], "safetyNotes": [], "projectMission": "", "globalMission": "",
                "strategy": "project-global-default"}
    data: dict[str, Any] = {
        "run_id": run_id, "source_file": source, "session_id": "s1", "leaf": "e9", "segment": "main",
        "chunk_index": chunk, "first_entry_id": "e1", "last_entry_id": "e9", "turns": 2,
        "document_id": f"pi-import:s1:project:main:w{chunk:04d}", "bank_role": "project", "bank_id": "b1",
        "decision": decision, "tags": ["project:x", "harness:pi"], "observation_scopes": [["project:x"]],
        "content_sha256": "c" * 64, "item_sha256": "i" * 64, "bytes": 120, "messages_kept": 3,
        "messages_dropped": {"recall": 1}, "blocks_removed": {}, "redactions": {"jwt": 1, "cookie": 2},
        "fingerprints": ["jwt:ab12"], "status": "planned", "bank_why": "configured bank",
    }
    for key, value in changes.items():
        if key in decision or key == "skipReason":  # the decision gains skip_reason (issue 18)
            decision[key] = value
        else:
            data[key] = value
    return ManifestRow.from_json(data)


ODD = ['é"\\\n\t\u2028\U0001F600', "a\x01b", "", " spaced ", "\x7f", "日本"]


def test_manifest_rows_round_trip_through_their_columns(tmp_path: Path) -> None:
    rows = [
        row("r1", "/a.jsonl", 0),
        row("r1", "/a.jsonl", 1, project="acme", started_at="2026-05-01T10:00:00.000Z",
            ended_at="2026-05-01T10:02:00+02:00", live_retained={"decision": "include"}, observation_scopes=None),
        row("r1", "/a.jsonl", 2, route="skip", status="skipped", document_id=None, bank_id=None, bank_role=None,
            item_sha256=None, skipReason="temporary", started_at="not a time"),
        row("r1", "/b.jsonl", 0),
        row("r2", "/a.jsonl", 0, content="kept text"),
        # Text JSON escapes, in lists and map keys (read back as JSON text), maps in their own order.
        row("r2", "/a.jsonl", 1, tags=ODD, fingerprints=ODD[::-1], redactions={key: n for n, key in enumerate(ODD)},
            messages_dropped={"z": 1, "a": 2}, started_at="0999-01-01T00:00:00.999Z"),
    ]
    with Ledger(tmp_path / "state") as ledger:
        ledger.add_manifest_rows(rows)
        assert ledger.latest_rows("/a.jsonl", "r1") == [r.as_json() for r in rows[:3]]
        assert ledger.latest_rows("/a.jsonl", "r2") == [r.as_json() for r in rows[4:]]
        assert list(ledger.latest_rows("/a.jsonl", "r2")[1]["messages_dropped"]) == ["z", "a"]
        assert ledger.latest_rows("/c.jsonl", "r1") == []
        # The typed form names exactly the keys these rows (each optional one set in some row) come back with.
        keys = set(ManifestRowJson.__required_keys__) | set(ManifestRowJson.__optional_keys__)
        assert {key for r in rows for key in r.as_json()} == keys
        typed = ledger.db.execute("SELECT started_at, ended_at, project, skip_reason, redactions, tags, bytes "
                                  "FROM manifest WHERE chunk_index = 1").fetchone()
    assert typed is not None
    assert [str(v) for v in typed[:2]] == ["2026-05-01 10:00:00", "2026-05-01 08:02:00"]  # UTC
    assert typed[2:] == ("acme", None, {"jwt": 1, "cookie": 2}, ["project:x", "harness:pi"], 120)


def test_report_counts_chunks_in_sql_and_groups_skips_by_skip_reason(runner: CliRunner, tmp_path: Path) -> None:
    """Each chunk once (its first row; a chunk routed to both banks has two), banks per row, redactions summed,
    ties in the order first written; skips by skip_reason, else (rows from before it existed) by the reason."""
    skip = {"route": "skip", "status": "skipped", "bank_id": None, "document_id": None, "redactions": {}}
    rows = [
        row("r1", "/a.jsonl", 0, redactions={"cookie": 1, "jwt": 1}),
        row("r1", "/a.jsonl", 0, bank_id="user-bank", bank_role="global", redactions={"cookie": 1, "jwt": 1}),
        row("r1", "/a.jsonl", 1, route="both", redactions={"slack-token": 2}),
        row("r1", "/a.jsonl", 2, **skip, skipReason="secret-policy", reason="explicit-only mode: the user opted out"),
        row("r1", "/b.jsonl", 0, **skip, skipReason="temporary", reason="explicit-only mode: nothing kept"),
        row("r1", "/b.jsonl", 1, **skip, skipReason="temporary", reason="explicit-only mode: nothing kept either"),
        row("r1", "/b.jsonl", 2, **skip, reason="full mode: temporary detail"),
        row("r2", "/b.jsonl", 3, **skip, reason="full mode: temporary detail"),
    ]
    state = tmp_path / "state"
    with Ledger(state) as ledger:
        ledger.start_run("r1", "import", "dry-run")
        ledger.add_manifest_rows(rows)
    data = json.loads(invoke(runner, "report", "--state", str(state), "--run", "r1", "--json").stdout)
    assert data["chunks"] == 6
    assert list(data["by_route"].items()) == [("skip", 4), ("project", 1), ("both", 1)]
    assert list(data["by_bank"].items()) == [("b1", 2), ("user-bank", 1)]
    assert list(data["redactions_by_rule"].items()) == [("slack-token", 2), ("cookie", 1), ("jwt", 1)]
    assert list(data["skipped_by_reason"].items()) == [("temporary", 2), ("secret-policy", 1), ("temporary detail", 1)]


def test_reuse_reads_each_unchanged_files_rows_in_one_pass(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seven files, one of them changed and one new, their rows read two at a time, three sources a statement:
    every unchanged file gets its own rows back, in the order written."""
    from hindsight_batch.ledger import latest_rows

    monkeypatch.setattr(latest_rows, "_FETCH", 2)
    monkeypatch.setattr(latest_rows, "_SOURCES", 3)
    folder = tmp_path / "sessions"
    builders = []
    for index in range(6):
        b = SessionBuilder(cwd="/work/window", session_id=f"0196f000-0000-7000-8000-0000000007{index:02d}")
        for turn in range(index % 3 + 1):
            b.user(f"session {index} turn {turn}: we decided to keep the window reuse in the ledger module")
            b.assistant("noted")
        b.write(folder / f"--work-window-{index}--" / "s.jsonl")
        builders.append(b)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"import": {"turnsPerChunk": 1}}))
    args = ("import", str(folder), "--config", str(config), "--json", "-q")
    assert invoke(runner, *args, "--manifest", str(tmp_path / "first.jsonl")).exit_code == 0
    builders[2].user("a new turn: the third session changed")
    builders[2].write(folder / "--work-window-2--" / "s.jsonl")
    new = SessionBuilder(cwd="/work/window", session_id="new-one")
    new.user("a new session")
    new.write(folder / "--a--" / "n.jsonl")
    again = invoke(runner, *args, "--manifest", str(tmp_path / "again.jsonl"))
    summary = json.loads(again.stdout)
    assert summary["unchanged_files"] == 5 and summary["sessions"] == 7
    first = [r for r in without_run_id(read_manifest(tmp_path / "first.jsonl")) if "window-2" not in r["source_file"]]
    reused = [r for r in without_run_id(read_manifest(tmp_path / "again.jsonl"))
              if "window-2" not in r["source_file"] and "--a--" not in r["source_file"]]
    assert reused == first and len(first) == 9
    # The changed file has rows of two runs now: a third run reuses those of the run that last read it.
    third = invoke(runner, *args, "--manifest", str(tmp_path / "third.jsonl"))
    assert json.loads(third.stdout)["unchanged_files"] == 7
    assert without_run_id(read_manifest(tmp_path / "third.jsonl")) == without_run_id(
        read_manifest(tmp_path / "again.jsonl"))


@pytest.mark.parametrize("per_statement", [10_000, 2])
def test_latest_rows_out_of_the_expected_order_are_looked_up_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, per_statement: int
) -> None:
    """The one pass follows the order the import said it would ask in (in one statement, or in several: the rows
    one statement sorts are bounded); a source asked for out of that order, one not expected, or asked for under
    another run still gets its rows (looked up alone), and nothing is skipped that is asked for later in order."""
    from hindsight_batch.ledger import latest_rows
    from hindsight_batch.plan.rows import SourceRecord

    monkeypatch.setattr(latest_rows, "_SOURCES", per_statement)

    rows = [row("r1", "/a.jsonl", 0), row("r1", "/a.jsonl", 1), row("r1", "/b.jsonl", 0), row("r2", "/c.jsonl", 0),
            row("r1", "/c.jsonl", 0), row("r1", "/d.jsonl", 0)]
    json_of = {path: [r.as_json() for r in rows if r.source_file == path and r.run_id == run]
               for path, run in (("/a.jsonl", "r1"), ("/b.jsonl", "r1"), ("/c.jsonl", "r2"), ("/d.jsonl", "r1"))}
    with Ledger(tmp_path / "state") as ledger:
        ledger.add_manifest_rows(rows)
        ledger.record_sources([SourceRecord(path, 1, 1, "s1", "h", run, None) for path, run in
                               (("/a.jsonl", "r1"), ("/b.jsonl", "r1"), ("/c.jsonl", "r2"), ("/d.jsonl", "r1"),
                                ("/e.jsonl", "r1"))])
        alone = _CountingLookups(ledger.db)
        ledger.db = alone  # type: ignore[assignment]
        ledger.expect_reuse(["/a.jsonl", "/b.jsonl", "/c.jsonl", "/e.jsonl", "/d.jsonl"])
        assert ledger.latest_rows("/b.jsonl", "r1") == json_of["/b.jsonl"]  # /a.jsonl passed over
        assert ledger.latest_rows("/a.jsonl", "r1") == json_of["/a.jsonl"]  # asked for after: alone
        assert ledger.latest_rows("/c.jsonl", "r1") == [rows[4].as_json()]  # not the run that last read it
        assert ledger.latest_rows("/x.jsonl", "r1") == []  # not expected (and not known)
        assert ledger.latest_rows("/e.jsonl", "r1") == []  # known, with no rows
        assert ledger.latest_rows("/d.jsonl", "r1") == json_of["/d.jsonl"]
        assert ledger.latest_rows("/d.jsonl", "r1") == json_of["/d.jsonl"]  # twice: the second time alone
        assert alone.lookups == ["/a.jsonl", "/c.jsonl", "/x.jsonl", "/d.jsonl"]
        # A pass whose first source asked for comes late starts there: what comes before it is not read.
        ledger.expect_reuse(["/a.jsonl", "/b.jsonl", "/c.jsonl", "/e.jsonl", "/d.jsonl"])
        alone.statements = 0
        assert ledger.latest_rows("/d.jsonl", "r1") == json_of["/d.jsonl"]
        assert ledger.latest_rows("/b.jsonl", "r1") == json_of["/b.jsonl"]  # passed: alone
        assert alone.statements == 1 and alone.lookups[-1] == "/b.jsonl"


class _CountingLookups:
    """A ledger connection that notes each source whose rows are looked up alone, and the one pass's statements."""

    def __init__(self, db: duckdb.DuckDBPyConnection) -> None:
        self.db = db
        self.lookups: list[str] = []
        self.statements = 0  # of the one pass

    def execute(self, query: str, parameters: list[Any] | None = None) -> duckdb.DuckDBPyConnection:
        if "source_file = ?" in query and parameters:
            self.lookups.append(parameters[-1])
        return self.db.execute(query, parameters)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        self.statements += 1
        return self.db.cursor()

    def close(self) -> None:
        self.db.close()


def test_a_rows_json_with_changes_is_the_json_of_the_changed_row() -> None:
    """What the importer adds to a planned row (how its bank was chosen, the live check, its status) goes in as the
    row is written, as if the row had been copied with them: the same keys, in the same order."""
    from dataclasses import replace

    base = row("r1", "/a.jsonl", 0, content="kept text")
    for changes in ({}, {"status": "unchanged"}, {"bank_why": None, "live_retained": {"decision": "include"}},
                    {"bank_why": "configured", "live_retained": None, "status": "planned", "content": None}):
        assert list(base.as_json(**changes).items()) == list(replace(base, **changes).as_json().items())
