"""`hindsight-batch import` as a user runs it: manifests, summaries, re-runs, safety rules S1, S3, S4, S6."""

from __future__ import annotations

import builtins
import hashlib
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hindsight_batch.ledger import Ledger
from tests.conftest import (
    MAIN_SAMPLE,
    REAL_SAMPLES,
    SAMPLES,
    SessionBuilder,
    invoke,
    read_manifest,
    seeded,
    serving,
)


def run_import(
    runner: CliRunner, tmp_path: Path, *args: str, name: str = "out.jsonl", exit_code: int = 0
) -> tuple[list[dict], dict]:  # type: ignore[type-arg]
    manifest = tmp_path / name
    result = invoke(runner, "import", *args, "--manifest", str(manifest), "--json", "-q")
    assert result.exit_code == exit_code, result.stderr
    return read_manifest(manifest), json.loads(result.output)


def test_samples_manifest_holds_no_recall_no_hindsight_tool_output_no_secret(runner: CliRunner, tmp_path: Path) -> None:
    rows, summary = run_import(runner, tmp_path, str(SAMPLES), "--include-content")
    contents = "\n".join(r["content"] for r in rows if r.get("content"))
    assert "refactor" in contents or "lock" in contents  # real transcript text is there
    for needle in seeded("seeded-memory-markers.txt") + seeded("seeded-secrets.txt"):
        assert needle not in contents, needle
    everything = (tmp_path / "out.jsonl").read_text()
    for secret in seeded("seeded-secrets.txt"):
        assert secret not in everything  # not in fingerprints, reasons or tags either
    assert summary["messages_dropped"]["recall"] == 3 and summary["messages_dropped"]["hindsight-tool"] == 1
    assert summary["redactions"]["github-token"] == 1 and summary["redactions"]["private-key"] == 1
    assert "hindsight_recall" not in contents


def test_no_content_in_the_manifest_unless_asked(runner: CliRunner, tmp_path: Path) -> None:
    rows, _ = run_import(runner, tmp_path, str(SAMPLES))
    assert rows and all("content" not in r for r in rows)
    text = (tmp_path / "out.jsonl").read_text()
    assert "stale-owner check" not in text


def test_content_field_is_exactly_what_would_be_uploaded(runner: CliRunner, tmp_path: Path) -> None:
    rows, _ = run_import(runner, tmp_path, str(MAIN_SAMPLE), "--include-content")
    for row in rows:
        assert hashlib.sha256(row["content"].encode()).hexdigest() == row["content_sha256"]
        assert row["bytes"] == len(row["content"].encode())
        for line in row["content"].split("\n"):
            json.loads(line)  # one projected record per line


def test_second_run_gives_identical_ids_and_hashes_and_reuses_unchanged_files(
    runner: CliRunner, tmp_path: Path
) -> None:
    first, s1 = run_import(runner, tmp_path, str(SAMPLES), name="a.jsonl")
    second, s2 = run_import(runner, tmp_path, str(SAMPLES), name="b.jsonl")
    key = lambda r: (r["document_id"], r["content_sha256"], r["item_sha256"], r["decision"]["route"])  # noqa: E731
    assert list(map(key, first)) == list(map(key, second))  # the same rows, in the same order
    assert s1["unchanged_files"] == 0 and s2["unchanged_files"] == s2["sessions"] == s1["sessions"]
    assert s2["entries"] == 0  # nothing was parsed again
    # With content requested the files are read again, and the ids and hashes are still the same.
    third, s3 = run_import(runner, tmp_path, str(SAMPLES), "--include-content", name="c.jsonl")
    assert sorted(map(key, third), key=str) == sorted(map(key, first), key=str) and s3["unchanged_files"] == 0


def test_jobs_plan_sessions_in_worker_processes_with_the_same_result(runner: CliRunner, tmp_path: Path) -> None:
    """``--jobs 3``: the same manifest rows in the same order and the same summary as one process, with the
    cases the parent decides (a copied session, a file that is not a session) mixed in."""
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLES, corpus)
    shutil.copy(MAIN_SAMPLE, corpus / "--home-dev-acme-api--" / "zz-copy.jsonl")
    (corpus / "notes.jsonl").write_text('{"not": "a session"}\n')
    state = str(tmp_path / "state")
    one, s1 = run_import(runner, tmp_path, str(corpus), str(REAL_SAMPLES), "--include-content", "--state", state,
                         name="one.jsonl", exit_code=1)  # notes.jsonl failed
    many, s3 = run_import(runner, tmp_path, str(corpus), str(REAL_SAMPLES), "--include-content", "--state", state,
                          "--jobs", "3", name="many.jsonl", exit_code=1)
    assert len(one) > 20 and s3["unchanged_files"] == 0  # every session was planned again, in the workers
    for row in one + many:
        row.pop("run_id")
    assert many == one
    varying = ("run_id", "seconds", "mb_per_second", "stage_seconds", "manifest", "jobs")
    assert {k: v for k, v in s3.items() if k not in varying} == {k: v for k, v in s1.items() if k not in varying}
    assert (s1["jobs"], s3["jobs"]) == (1, 3)  # --jobs auto (the default) plans a corpus this small here
    assert s3["duplicate_sessions"] and s3["not_sessions"] and s3["malformed_lines"]
    assert [Path(f["file"]).name for f in s3["failed_files"]] == ["notes.jsonl"]


def test_a_changed_file_is_read_again(runner: CliRunner, tmp_path: Path) -> None:
    b = SessionBuilder()
    b.user("first question about the parser")
    path = b.write(tmp_path / "s" / "a.jsonl")
    run_import(runner, tmp_path, str(path))
    b.assistant("the parser now streams")
    b.write(path)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10_000_000))
    rows, s2 = run_import(runner, tmp_path, str(path))
    assert s2["unchanged_files"] == 0 and rows[0]["messages_kept"] == 2


def test_session_files_are_opened_read_only(runner: CliRunner, tmp_path: Path) -> None:
    """S6: an import never writes a session file (the bytes and the mtime stay)."""
    copy = tmp_path / "sessions" / "--x--" / MAIN_SAMPLE.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(MAIN_SAMPLE.read_bytes())
    os.chmod(copy, 0o444)
    before = (copy.read_bytes(), copy.stat().st_mtime_ns)
    run_import(runner, tmp_path, str(tmp_path / "sessions"), "--include-content")
    assert (copy.read_bytes(), copy.stat().st_mtime_ns) == before


def test_session_files_are_opened_for_reading_only(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S6, as the process asks for it: every open of a session file, by any call (the header peek, the reader,
    hashing), in a first run and in a re-run, asks to read only. (The test above cannot see this when it runs as
    root, whom a file's read-only mode does not stop.)"""
    sessions = tmp_path / "sessions"
    shutil.copytree(SAMPLES, sessions)
    opened: list[tuple[str, object]] = []
    writing = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
    real_os_open, real_io_open = os.open, io.open

    def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fsdecode(path).startswith(str(sessions)):
            opened.append(("os.open", flags & writing))
        return real_os_open(path, flags, *args, **kwargs)

    def io_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if not isinstance(file, int) and os.fsdecode(file).startswith(str(sessions)):
            opened.append(("open", "".join(c for c in mode if c in "wax+")))
        return real_io_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(io, "open", io_open)
    monkeypatch.setattr(builtins, "open", io_open)
    run_import(runner, tmp_path, str(sessions), "--include-content", "--jobs", "1", name="first.jsonl")
    _, again = run_import(runner, tmp_path, str(sessions), "--jobs", "1", name="again.jsonl")
    assert again["unchanged_files"] == again["sessions"] > 0  # the re-run peeked at each file
    assert {how for how, _ in opened} == {"os.open"}  # every one by fsutil.open_regular (a FIFO never blocks it)
    assert [entry for entry in opened if entry[1]] == []


def test_lines_only_javascript_writes_are_read_like_any_other(runner: CliRunner, tmp_path: Path) -> None:
    """pi (JavaScript) can write a lone surrogate escape (an emoji cut in half): the fast JSON parser refuses it,
    so the line goes to the standard library; nothing is lost or reported malformed, and the half emoji becomes
    U+FFFD at read time. (NaN, which JSON.stringify never writes and JSON.parse refuses, is malformed for pi and
    so for us: test_hardened_reading.py.)"""
    b = SessionBuilder()
    b.user("first question")
    b.lines.append('{"type":"message","id":"e9","parentId":"e1","timestamp":"2026-05-01T10:00:05.000Z","message":'
                   '{"role":"user","content":[{"type":"text","text":"cut emoji \\ud83d here"}],"timestamp":1e400}}')
    path = b.write(tmp_path / "sessions" / "--work-demo--" / "s.jsonl")
    rows, summary = run_import(runner, tmp_path, str(path), "--include-content")
    assert summary["malformed_lines"] == 0 and summary["messages_kept"] == 2
    assert summary["surrogates_replaced"] == 1
    content = "\n".join(row["content"] for row in rows)
    assert "first question" in content and "cut emoji \ufffd here" in content


def test_summary_reports_malformed_lines_by_file_and_line_and_the_truncated_tail(
    runner: CliRunner, tmp_path: Path
) -> None:
    result = invoke(runner, "import", str(SAMPLES), "--manifest", str(tmp_path / "m.jsonl"))
    assert result.exit_code == 0
    assert "0196a1b2-0000-7000-8000-000000000004.jsonl:4: invalid JSON" in result.stderr
    assert "truncated last lines 1" in result.stderr and "glued lines recovered 2" in result.stderr
    assert "not a session:" in result.stderr and "empty file" in result.stderr
    assert "explicit-only" in result.stderr


def test_a_file_of_many_malformed_lines_is_counted_whole_and_its_first_shown(runner: CliRunner,
                                                                              tmp_path: Path) -> None:
    """Two damaged files: every malformed line is counted in the summary, the first ten of the run are shown on
    stderr and the first fifty in --json, in file and line order; the messages around them are imported."""
    folder = tmp_path / "sessions"
    for name in ("a", "b"):
        b = SessionBuilder(session_id=f"sess-{name}")
        b.user("the build passes now")
        for index in range(60):
            b.raw(f"{name} log line {index}" if index % 3 else '{"type":"message","id":"cut')
        b.user("and the release is tagged")
        b.write(folder / f"{name}.jsonl")
    result = invoke(runner, "import", str(folder), "--manifest", str(tmp_path / "m.jsonl"), "--json")
    summary = json.loads(result.stdout)
    assert result.exit_code == 0 and summary["malformed_lines"] == 120 and summary["messages_kept"] == 4
    listed = [(Path(p["file"]).name, p["line"]) for p in summary["malformed"]]
    assert listed == [("a.jsonl", line) for line in range(3, 53)]
    shown = invoke(runner, "import", str(folder), "--manifest", str(tmp_path / "n.jsonl"), "--state",
                   str(tmp_path / "other-state"))
    assert "malformed lines 120" in shown.stderr and shown.stderr.count("  malformed: ") == 10


def test_all_branches_import_each_branch_once(runner: CliRunner, tmp_path: Path) -> None:
    current, _ = run_import(runner, tmp_path, str(MAIN_SAMPLE), "--include-content", name="cur.jsonl")
    every, _ = run_import(runner, tmp_path, str(MAIN_SAMPLE), "--include-content", "--branches", "all",
                          name="all.jsonl")
    assert {r["segment"] for r in current} == {"main"}
    side = [r for r in every if r["segment"] != "main"]
    assert len(side) == 1 and "Rust" in side[0]["content"]
    assert "Rust" not in "".join(r["content"] for r in every if r["segment"] == "main")
    assert [r for r in every if r["segment"] == "main"] == [
        {**r, "run_id": every[0]["run_id"]} for r in current
    ]


def test_compaction_context_mode_keeps_pi_view(runner: CliRunner, tmp_path: Path) -> None:
    rows, _ = run_import(runner, tmp_path, str(MAIN_SAMPLE), "--include-content", "--compaction", "context")
    content = rows[0]["content"]
    assert "compactionSummary" in content and "Documented the lock protocol" in content
    assert "stale-owner check. Please fix" not in content  # before the kept entry: left out


def test_tags_scopes_and_metadata(runner: CliRunner, tmp_path: Path) -> None:
    project = tmp_path / "acme"
    (project / ".hindsight").mkdir(parents=True)
    (project / ".hindsight" / "config.json").write_text(json.dumps({
        "projectName": "acme-core", "constantTags": ["team:{basedir}", "{project}"],
        "observationScopes": [["{project}"], ["{session}", "harness:pi"]],
        "banks": {"project": {"bankId": "acme-bank"}},
    }))
    b = SessionBuilder(cwd=str(project), session_id="s-42")
    b.user("Add retries to the uploader in this repo.")
    b.assistant("Added bounded retries to the uploader.")
    rows, _ = run_import(runner, tmp_path, str(b.write(tmp_path / "sessions" / "a.jsonl")))
    row = rows[0]
    assert row["bank_id"] == "acme-bank" and row["document_id"] == "pi-import:s-42:project:main:w0000"
    for tag in ("harness:pi", "session:s-42", "parent:s-42", f"cwd:{project}", "basedir:acme",
                "project:acme-core", "store_method:import"):
        assert tag in row["tags"]
    # As hindsight-pi: constantTags are not expanded at all; in observationScopes a whole-tag placeholder is.
    assert "team:{basedir}" in row["tags"] and "{project}" in row["tags"] and "team:acme" not in row["tags"]
    assert row["observation_scopes"] == [["project:acme-core"], ["session:s-42", "harness:pi"]]
    assert row["decision"]["route"] == "project" and row["status"] == "planned"


def test_placeholders_expand_whole_tags_only_as_the_extension_does(runner: CliRunner, tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".hindsight").mkdir(parents=True)
    (project / ".hindsight" / "config.json").write_text(json.dumps(
        {"observationScopes": [["{branch}", "team-{project}", "{project}", "{cwd}"]]}))
    b = SessionBuilder(cwd=str(project) + "/")
    b.user("hello there")
    rows, _ = run_import(runner, tmp_path, str(b.write(tmp_path / "s" / "a.jsonl")))
    assert rows[0]["observation_scopes"] == [["{branch}", "team-{project}", "project:p", f"cwd:{project}"]]


def test_filters_by_cwd_and_since(runner: CliRunner, tmp_path: Path) -> None:
    _, summary = run_import(runner, tmp_path, str(SAMPLES), "--cwd", "/home/dev/acme-web")
    assert summary["sessions"] == 1 and summary["filtered_out"] == 6
    _, later = run_import(runner, tmp_path, str(SAMPLES), "--since", "2999-01-01", name="later.jsonl")
    assert later["sessions"] == 0
    bad = invoke(runner, "import", str(SAMPLES), "--since", "yesterday")
    assert bad.exit_code == 2 and "--since" in bad.stderr


def test_a_second_concurrent_run_is_busy(runner: CliRunner, tmp_path: Path) -> None:
    state = tmp_path / "state-dir"
    with Ledger(state):
        result = invoke(runner, "import", str(SAMPLES), "--state", str(state))
    assert result.exit_code == 75 and "another hindsight-batch run" in result.stderr


def test_missing_path_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    result = invoke(runner, "import", str(tmp_path / "nope"))
    assert result.exit_code == 2 and "no such file or folder" in result.stderr


@pytest.mark.parametrize("name", sorted(p.name for p in REAL_SAMPLES.glob("*.jsonl")))
def test_every_real_sample_imports_without_error(runner: CliRunner, tmp_path: Path, name: str) -> None:
    rows, summary = run_import(runner, tmp_path, str(REAL_SAMPLES / name), "--include-content")
    assert summary["sessions"] == 1 and summary["malformed_lines"] == 0
    for row in rows:
        assert all(isinstance(v, str) for v in row["tags"])
        assert "data:image" not in (row.get("content") or "") and "iVBORw0KGgo" not in (row.get("content") or "")


def test_ledger_records_runs_sources_and_manifest_rows(runner: CliRunner, tmp_path: Path) -> None:
    state = tmp_path / "ledger"
    invoke(runner, "import", str(SAMPLES), "--state", str(state), "-q")
    with Ledger(state) as ledger:
        assert ledger.db.execute("SELECT count(*) FROM runs WHERE status = 'ok'").fetchone() == (1,)
        assert ledger.db.execute("SELECT count(*) FROM sources").fetchone() == (7,)
        routes = dict(ledger.db.execute("SELECT route, count(*) FROM manifest GROUP BY route").fetchall())
    assert sum(routes.values()) >= 8


def routed_session(tmp_path: Path, mode: str) -> Path:
    project = tmp_path / "proj"
    project.mkdir(parents=True, exist_ok=True)
    # The user's own file: a per-project one may not switch userRetain.mode or name the User Bank (issue 17).
    (tmp_path / "home" / ".hindsight").mkdir(parents=True, exist_ok=True)
    (tmp_path / "home" / ".hindsight" / "config.json").write_text(json.dumps({
        "userRetain": {"mode": mode}, "import": {"turnsPerChunk": 1},
        "banks": {"project": {"bankId": "proj-bank"}, "user": {"bankId": "user-bank", "enabled": True}},
    }))
    b = SessionBuilder(cwd=str(project), session_id="routed")
    b.user("I prefer terse answers with the command first, in every project.")
    b.user("I prefer small reviewed pull requests across all my projects, and this repo's importer should too.")
    b.user("Screenshot saved to /var/folders/7x/T/Screen Shot 2026-05-01 at 10.02.11.png")
    b.user("We decided to use deterministic document ids in the importer; implemented in items.py.")
    b.user("I prefer terse answers across all my projects; my token is ghp_16C7e42F292c6912E7710c838347Ae178B4a")
    return b.write(tmp_path / "sessions" / "routed.jsonl")


def test_router_mode_writes_follow_the_decision_and_both_links_the_two_documents(
    runner: CliRunner, tmp_path: Path
) -> None:
    rows, summary = run_import(runner, tmp_path, str(routed_session(tmp_path, "router")), "--include-content")
    by_window: dict[int, list[dict]] = {}  # type: ignore[type-arg]
    for row in rows:
        by_window.setdefault(row["chunk_index"], []).append(row)
    assert [r["bank_role"] for r in by_window[0]] == ["global"] and by_window[0][0]["bank_id"] == "user-bank"
    both = {r["bank_role"]: r for r in by_window[1]}
    assert set(both) == {"project", "global"}
    assert both["project"]["document_id"] == "pi-import:routed:project:main:w0001"
    assert both["global"]["document_id"] == "pi-import:routed:global:main:w0001"
    assert by_window[2][0]["status"] == "skipped" and by_window[2][0]["bank_role"] is None
    assert [r["bank_role"] for r in by_window[3]] == ["project"]
    # A chunk with a (redacted) secret never goes to the User Bank, even in router mode.
    assert [r["bank_role"] for r in by_window[4]] == ["project"]
    assert summary["router_mode_on"] is True and summary["skip_reasons"] == {
        "transient artifact (screenshot artifact, transient artifact path)": 1}
    assert summary["items_by_bank_role"] == {"global": 2, "project": 3}


def test_router_mode_is_announced_in_the_summary(runner: CliRunner, tmp_path: Path) -> None:
    path = routed_session(tmp_path, "router")
    result = invoke(runner, "import", str(path), "--manifest", str(tmp_path / "m.jsonl"))
    assert "ROUTER MODE IS ON" in result.stderr


def test_both_items_name_each_other_in_metadata(tmp_path: Path) -> None:
    from hindsight_batch.config import ConfigResolver
    from hindsight_batch.plan.planning import plan_session
    from hindsight_batch.redaction.redactor import Redactor
    from hindsight_batch.retention.stagetimes import StageTimes
    from hindsight_batch.session.reader import peek_header

    path = routed_session(tmp_path, "router")
    header = peek_header(path)
    assert not isinstance(header, str)
    settings = ConfigResolver(env={}).for_cwd(header.cwd).settings
    plan = plan_session(path, header, settings, Redactor(b"k"), "r", False, StageTimes())
    pair = [p.item for p in plan.items if p.item.metadata["window"] == "1"]
    assert pair[0].metadata["other_document_id"] == pair[1].document_id
    assert pair[1].metadata["other_document_id"] == pair[0].document_id
    assert all(isinstance(v, str) for p in plan.items for v in p.item.metadata.values())


def test_explicit_only_import_never_targets_the_user_bank(runner: CliRunner, tmp_path: Path) -> None:
    rows, summary = run_import(runner, tmp_path, str(routed_session(tmp_path, "explicit-only")))
    assert {r["bank_role"] for r in rows} <= {"project", None}
    assert summary["items_by_bank_role"] == {"project": 4}
    suggested = [r for r in rows if r["decision"]["route"] in ("global", "both")]
    assert suggested and all(
        not t["willWrite"] for r in suggested for t in r["decision"]["targets"] if t["bankRole"] == "global"
    )


def test_apply_against_an_unreachable_server_exits_4_before_any_work(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_BASE_URL", "http://127.0.0.1:9")
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"upload": {"maxAttempts": 1}}))
    result = invoke(runner, "import", str(SAMPLES), "--apply", "--config", str(config), "--state", str(tmp_path / "s"))
    assert result.exit_code == 4 and "no answer from http://127.0.0.1:9" in result.stderr
    with Ledger(tmp_path / "s") as ledger:
        assert ledger.documents(("sent", "confirmed")) == []


def test_wait_without_apply_is_a_usage_error(runner: CliRunner) -> None:
    result = invoke(runner, "import", str(SAMPLES), "--wait")
    assert result.exit_code == 2 and "--wait goes with --apply" in result.stderr


def test_a_copied_session_file_is_imported_once(runner: CliRunner, tmp_path: Path) -> None:
    b = SessionBuilder(session_id="same-id")
    b.user("one session, two files")
    first = b.write(tmp_path / "a" / "1.jsonl")
    second = b.write(tmp_path / "b" / "2.jsonl")
    rows, summary = run_import(runner, tmp_path, str(second), str(first))
    assert {r["source_file"] for r in rows} == {str(first)}
    assert summary["duplicate_sessions"] == [{"file": str(second), "same_session_as": str(first)}]
    _, again = run_import(runner, tmp_path, str(second), name="again.jsonl")  # the ledger remembers the other file
    assert again["duplicate_sessions"] == [{"file": str(second), "same_session_as": str(first)}]


def test_report_summarises_the_latest_run(runner: CliRunner, tmp_path: Path) -> None:
    state = tmp_path / "ledger"
    invoke(runner, "import", str(SAMPLES), "--state", str(state), "-q")
    result = invoke(runner, "report", "--state", str(state), "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["chunks"] == 9 and data["by_route"] == {"project": 9}
    assert data["redactions_by_rule"]["github-token"] == 1 and data["runs"][0]["mode"] == "dry-run"
    human = invoke(runner, "report", "--state", str(state))
    assert "routes: project 9" in human.output
    for secret in seeded("seeded-secrets.txt"):
        assert secret not in result.output
    unknown = invoke(runner, "report", "--state", str(state), "--run", "no-such-run")
    assert unknown.exit_code == 2 and "no-such-run" in unknown.stderr  # a typo is not an empty report


def test_flush_of_a_path_that_does_not_exist_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    result = invoke(runner, "flush", str(tmp_path / "no-such-queue.jsonl"))
    assert result.exit_code == 2 and "no-such-queue.jsonl" in result.output + result.stderr


def test_s7_prompt_text_is_never_policy(runner: CliRunner, tmp_path: Path) -> None:
    """S7: policy comes from commands and session metadata, never from markers in what the user typed."""
    b = SessionBuilder()
    b.user("#nomem #skip #private #global please keep this turn: the parser now streams")
    b.assistant("Noted #nomem: the parser streams line by line.")
    rows, summary = run_import(runner, tmp_path, str(b.write(tmp_path / "s" / "a.jsonl")), "--include-content")
    assert summary["messages_kept"] == 2 and "#nomem #skip" in rows[0]["content"]
    assert rows[0]["bank_role"] == "project"  # "#global" routes nothing anywhere


@pytest.mark.parametrize("custom_type", ["hindsight-recall-v2", "hindsight-memory", "hindsightContext",
                                         "Hindsight-Status"])
def test_s1_every_hindsight_custom_type_in_both_shapes_stays_out_even_with_include_content(
    runner: CliRunner, tmp_path: Path, custom_type: str
) -> None:
    """The README promises every `hindsight…` custom type, not only `hindsight-recall`; retainCustomTypes ["*"]
    (keep every custom message) must not let one through."""
    b = SessionBuilder(cwd=str(tmp_path))
    b.user("what did we decide about the cache?")
    b.entry("custom_message", customType=custom_type, content=f"LEAK-{custom_type}-as-custom-message", display=False)
    b.message("custom", f"LEAK-{custom_type}-as-role-custom", customType=custom_type, display=False)
    b.message("custom", [{"type": "text", "text": f"LEAK-{custom_type}-blocks"}], customType=custom_type)
    b.entry("custom_message", customType="team-notes", content="KEEP-other-custom-type", display=True)
    b.assistant("we keep the write-through cache")
    path = b.write(tmp_path / "s.jsonl")
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"import": {"retainCustomTypes": ["*"]}}))
    rows, summary = run_import(runner, tmp_path, str(path), "--include-content", "--config", str(config))
    assert rows and all(r.get("content") is not None for r in rows)
    everything = (tmp_path / "out.jsonl").read_text()
    assert "KEEP-other-custom-type" in everything and "write-through cache" in everything  # retained as asked
    assert "LEAK-" not in everything
    assert summary["messages_dropped"]["recall"] == 3


def test_a_dry_run_writes_nothing_to_the_server_and_its_help_says_what_it_asks(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The help text is true: a dry run only reads from the configured server (with the configured key), and
    ``--live-retained include`` asks nothing."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[tuple[str, str | None]] = []

    class Recorder(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _answer(self) -> None:
            seen.append((self.command, self.headers.get("Authorization")))
            self.send_response(404)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Recorder)) as port:
        monkeypatch.setenv("HINDSIGHT_BASE_URL", f"http://127.0.0.1:{port}")
        monkeypatch.setenv("HINDSIGHT_API_KEY", "test-key-not-a-secret")
        b = SessionBuilder(cwd=str(tmp_path / "proj"), session_id="s-ask")
        b.user("Plan the uploader retries.")
        b.assistant("Planned.")
        path = b.write(tmp_path / "s" / "a.jsonl")
        assert invoke(runner, "import", str(path), "--state", str(tmp_path / "st1"), "-q").exit_code == 0
        assert seen and {method for method, _ in seen} == {"GET"}
        assert {auth for _, auth in seen} == {"Bearer test-key-not-a-secret"}
        seen.clear()
        result = invoke(runner, "import", str(path), "--state", str(tmp_path / "st2"), "-q", "--live-retained",
                        "include")
        assert result.exit_code == 0 and seen == []
    help_text = " ".join(invoke(runner, "import", "--help").output.split())
    assert "no network" not in help_text
    assert "writes nothing to the server" in help_text and "unless --live-retained include" in help_text
    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    assert "no network" not in readme and "writes nothing to the server" in readme


def test_rows_name_the_project_and_the_first_and_last_valid_timestamps_in_utc(
    runner: CliRunner, tmp_path: Path
) -> None:
    b = SessionBuilder(cwd="/work/acme-api")

    def say(role: str, text: str, stamp: str) -> None:
        b.entry("message", timestamp=stamp, message={"role": role, "content": [{"type": "text", "text": text}],
                                                     "timestamp": 1777629600000})

    say("user", "how do we deploy the api service?", "not a time")  # no valid timestamp: not the start
    say("assistant", "with make deploy from the repository root", "2026-05-01T12:00:00+02:00")
    say("user", "and where do the tests run?", "2026-05-01T10:05:00")  # no zone: UTC
    say("assistant", "in CI on every push", "1969-12-31T23:59:59Z")  # before 1971: not a valid one
    rows, _ = run_import(runner, tmp_path, str(b.write(tmp_path / "s" / "a.jsonl")))
    assert rows and {r["project"] for r in rows} == {"acme-api"}
    assert rows[0]["started_at"] == "2026-05-01T10:00:00.000Z"
    assert rows[-1]["ended_at"] == "2026-05-01T10:05:00.000Z"
    assert all(r["skip_reason"] is None for r in rows if r["status"] != "skipped")
    assert "skipReason" not in rows[0]["decision"]  # the decision object keeps its keys


def test_a_reused_row_is_the_row_first_written(runner: CliRunner, tmp_path: Path) -> None:
    """Byte for byte, but for the run id (the same keys, in the same order), and counted the same."""
    paths = (str(SAMPLES), str(REAL_SAMPLES), str(routed_session(tmp_path, "router")))  # (a skip; two banks)
    first, s1 = run_import(runner, tmp_path, *paths, name="a.jsonl")
    second, s2 = run_import(runner, tmp_path, *paths, name="b.jsonl")
    assert s2["unchanged_files"] == s2["sessions"] > 0 and s2["entries"] == 0
    assert (tmp_path / "b.jsonl").read_text() == (tmp_path / "a.jsonl").read_text().replace(s1["run_id"],
                                                                                           s2["run_id"])
    assert len(second) == len(first) > 20 and {r["status"] for r in first} == {"planned", "skipped"}
    for counted in ("chunks", "routes", "statuses", "items_by_bank_role", "skip_reasons"):
        assert s2[counted] == s1[counted], counted
    assert s1["skip_reasons"] and s1["items_by_bank_role"]["global"] and s1["chunks"] < len(first)


def test_a_row_an_older_version_wrote_is_reused_in_this_versions_form(runner: CliRunner, tmp_path: Path) -> None:
    """The ledger's decision text is what the version that read the file wrote: one with a key this version does
    not have is written as this version writes it (here, without that key)."""
    state = str(tmp_path / "ledger")
    first, _ = run_import(runner, tmp_path, str(MAIN_SAMPLE), "--state", state, name="a.jsonl")
    with Ledger(Path(state)) as ledger:
        ledger.db.execute("""UPDATE manifest SET decision = '{"formerKey":1,' || decision[2:]""")
        stored = ledger.db.execute("SELECT decision FROM manifest").fetchall()
    assert stored and all('"formerKey"' in text for (text,) in stored)
    second, s2 = run_import(runner, tmp_path, str(MAIN_SAMPLE), "--state", state, name="b.jsonl")
    assert s2["unchanged_files"] == 1 and second == [dict(r, run_id=s2["run_id"]) for r in first]
    assert "formerKey" not in (tmp_path / "b.jsonl").read_text()


@pytest.mark.parametrize("where", ["an empty folder", "pi's agent folder", "the default root, empty"])
def test_an_import_that_finds_no_session_files_says_where_pi_keeps_them(
    runner: CliRunner, tmp_path: Path, where: str
) -> None:
    """It said "files 0" and nothing else; ~/.pi/agent is one level above where pi keeps sessions."""
    home = tmp_path / "home"
    root = home / ".pi" / "agent" / "sessions"
    args: list[str] = []
    if where == "an empty folder":
        (tmp_path / "empty").mkdir()
        args = [str(tmp_path / "empty")]
    elif where == "pi's agent folder":
        SessionBuilder().write(root / "--work-demo--" / "s.jsonl")
        args = [str(home / ".pi" / "agent")]
    else:
        root.mkdir(parents=True)
    for extra in ([], ["--json"]):
        result = invoke(runner, "import", *args, "--state", str(tmp_path / "state"), *extra)
        assert result.exit_code == 0, result.stderr
        searched = args[0] if args else str(root)
        assert f"no session files found under {searched}" in result.stderr
        if where == "pi's agent folder":
            assert f"pi keeps them in {root}, one folder per project: did you mean {root}?" in result.stderr
        else:
            assert f"pi keeps them in {root}, one folder per project" in result.stderr
    quiet = invoke(runner, "import", *args, "--state", str(tmp_path / "state"), "-q")
    assert quiet.exit_code == 0 and quiet.stderr == ""
