"""`hindsight-batch review`: the page's content against the ledger, its safety (escaping, 0600), its errors."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import duckdb
from click.testing import CliRunner

from hindsight_batch.review import write_review
from tests.conftest import SAMPLES, SessionBuilder, invoke, seeded

HOSTILE = "</script><img src=x onerror=alert(1)><!-- \u2028\u2029 &amp; <b>bold</b>"
DATA_BLOCK = re.compile(r'<script type="application/json" id="review-data">(.*?)</script>', re.S)


def import_and_review(runner: CliRunner, tmp_path: Path, *paths: str) -> tuple[Path, list[dict[str, Any]], str]:
    """Dry-run import with content into a state of its own, then `review -o`: (page, manifest rows, stdout)."""
    state, manifest, page = tmp_path / "state", tmp_path / "m.jsonl", tmp_path / "page.html"
    result = invoke(runner, "import", *paths, "--include-content", "--state", str(state), "--manifest",
                    str(manifest), "--live-retained", "include", "-q")
    assert result.exit_code == 0, result.output
    page.write_text("an older page, readable by all")
    page.chmod(0o644)  # replaced by a private one
    result = invoke(runner, "review", "--state", str(state), "-o", str(page))
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in manifest.read_text(encoding="utf-8").split("\n") if line]  # U+2028 too
    return page, rows, result.stdout


def page_data(page: Path) -> dict[str, Any]:
    """The page's data: the session index, each session with its chunks from the session's own block."""
    html = page.read_text(encoding="utf-8")
    found = DATA_BLOCK.findall(html)
    assert len(found) == 1
    data: dict[str, Any] = json.loads(found[0])
    for session in data["sessions"]:
        block = re.search(rf'<script type="application/json" id="chunks-{session["k"]}">(.*?)</script>', html, re.S)
        assert block is not None
        session["chunks"] = json.loads(block.group(1))
        assert len(session["chunks"]) == session["n"]
    return data


def test_samples_page_matches_the_manifest(runner: CliRunner, tmp_path: Path) -> None:
    page, rows, out = import_and_review(runner, tmp_path, str(SAMPLES))
    assert out.strip() == str(tmp_path / "page.html")
    assert stat.S_IMODE(page.stat().st_mode) == 0o600
    data = page_data(page)
    chunks = {(r["source_file"], r["segment"], r["chunk_index"]): r for r in rows}
    shown = {(s["file"], c["seg"], c["i"]): c for s in data["sessions"] for c in s["chunks"]}
    assert shown.keys() == chunks.keys()
    for session in data["sessions"]:  # in order: a session's chunks, and sessions by start (undated last)
        assert [c["i"] for c in session["chunks"]] == sorted(c["i"] for c in session["chunks"])
    starts = [s["start"] or "~" for s in data["sessions"]]
    assert starts == sorted(starts) and any(c["i"] == 3 for s in data["sessions"] for c in s["chunks"])
    for key, chunk in shown.items():
        row = chunks[key]
        assert (chunk["first"], chunk["last"], chunk["route"], chunk["reason"], chunk["conf"], chunk["content"]) == (
            row["first_entry_id"], row["last_entry_id"], row["decision"]["route"], row["decision"]["reason"],
            row["decision"]["confidence"], row["content"])
        assert chunk["tags"] == row["tags"]
    html = page.read_text(encoding="utf-8")
    # the command that sends exactly this dry run's plan
    assert f"hindsight-batch import --apply --from-run {rows[0]['run_id']}</code>" in html
    # where it goes: one table row per bank with its session and chunk counts
    for bank in {r["bank_id"] for r in rows}:
        sessions = len({r["session_id"] for r in rows if r["bank_id"] == bank})
        n = len({(r["source_file"], r["segment"], r["chunk_index"]) for r in rows if r["bank_id"] == bank})
        assert re.search(rf"<td>{re.escape(bank)}</td><td>[^<]*</td><td class=n>{sessions}</td>"
                         rf"<td class=n>{n}</td>", html), bank
    # what was left out: redactions by rule, counts only; no secret value anywhere in the page
    redactions: dict[str, int] = {}
    for r in chunks.values():
        for rule, count in r["redactions"].items():
            redactions[rule] = redactions.get(rule, 0) + count
    for rule, count in redactions.items():
        assert f"<td>{rule}</td><td class=n>{count}</td>" in html
    assert "[REDACTED:openai-key]" in html
    for secret in seeded("seeded-secrets.txt"):
        assert secret not in html
    # the chart: one bar per bank and week that has dated chunks
    assert "<svg" in html and "pi-acme-api-6689668a, week of 2026-04-27: 3 chunk(s)" in html
    assert "http://" not in html.split("<body>", 1)[0]  # nothing fetched from anywhere


def test_transcript_text_cannot_break_out_of_the_data(runner: CliRunner, tmp_path: Path) -> None:
    b = SessionBuilder(cwd="/work/<img src=y onerror=alert(2)>", session_id="s-xss")
    b.user(f"please look at {HOSTILE}")
    b.assistant(f"done: {HOSTILE}")
    path = b.write(tmp_path / "sessions" / "--x--" / "2026-05-01T10-00-00-000Z_s-xss.jsonl")
    page, _, _ = import_and_review(runner, tmp_path, str(path))
    html = page.read_text(encoding="utf-8")
    assert "<img" not in html and "<b>bold" not in html and "<!--" not in html
    assert html.count("</script>") == 3  # the index's, the session's chunks' and the script's own
    assert "\u2028" not in html and "\u2029" not in html
    data = page_data(page)
    content = data["sessions"][0]["chunks"][0]["content"]
    assert HOSTILE in content  # shown as the text it is, byte for byte
    assert data["sessions"][0]["project"] == "<img src=y onerror=alert(2)>"


def test_left_out_and_user_bank_suggestions(runner: CliRunner, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    user = SessionBuilder(cwd="/work/alpha", session_id="s-user")
    user.entry("message", timestamp="2026-05-04T09:00:00.000Z", message={"role": "user", "content": [{
        "type": "text", "text": "I always prefer terse answers in every project; my communication style: no emojis. "
                                "Across all my projects use British spelling."}]})
    user.write(sessions / "--work-alpha--" / "2026-05-04T10-00-00-000Z_s-user.jsonl")
    skip = SessionBuilder(cwd="/work/beta", session_id="s-skip")
    skip.user("retry the flaky test, temporary debugging of a transient error")
    skip.write(sessions / "--work-beta--" / "2026-05-12T10-00-00-000Z_s-skip.jsonl")
    page, rows, _ = import_and_review(runner, tmp_path, str(sessions))
    html = page.read_text(encoding="utf-8")
    suggested = [r for r in rows if any(t["bankRole"] == "global" and not t["willWrite"]
                                        for t in r["decision"]["targets"])]
    assert len(suggested) == 1 and suggested[0]["session_id"] == "s-user"
    assert '<span id="suggestion-count">1</span>' in html
    assert re.search(r"<td>alpha</td><td>s-user</td><td>main #0</td><td>global</td>", html)
    skipped = [r for r in rows if r["status"] == "skipped"]
    assert len(skipped) == 1 and skipped[0]["session_id"] == "s-skip"
    assert skipped[0]["skip_reason"] == "temporary"  # skips are counted by their stable code
    assert "<td>temporary</td><td class=n>1</td>" in html
    data = page_data(page)
    # a session's date is its first entry's (the file name's where no entry has one)
    assert {s["project"]: s["start"][:10] for s in data["sessions"]} == {"alpha": "2026-05-04", "beta": "2026-05-01"}


def test_review_errors_and_default_run(runner: CliRunner, tmp_path: Path, monkeypatch: Any) -> None:
    state = tmp_path / "state"
    result = invoke(runner, "review", "--state", str(state), "-o", str(tmp_path / "p.html"))
    assert result.exit_code == 2 and "no runs in ledger" in result.stderr
    assert not (tmp_path / "p.html").exists() and not state.exists()
    b = SessionBuilder()
    b.user("first question about the parser")
    path = b.write(tmp_path / "s" / "a.jsonl")
    for _ in range(2):  # the second run reads nothing new: the default is the run that planned chunks
        assert invoke(runner, "import", str(path), "--state", str(state), "--live-retained", "include",
                      "-q").exit_code == 0
    result = invoke(runner, "review", "--state", str(state), "--run", "nope", "-o", str(tmp_path / "p.html"))
    assert result.exit_code == 2 and "--run nope" in result.stderr
    result = invoke(runner, "review", "--state", str(state), "-o", str(tmp_path / "missing" / "p.html"))
    assert result.exit_code == 2 and "-o " in result.stderr and "missing" in result.stderr
    assert not (tmp_path / "missing").exists()
    monkeypatch.chdir(tmp_path)
    result = invoke(runner, "review", "--state", str(state), "--json")
    assert result.exit_code == 0
    written = Path(json.loads(result.stdout)["review"])
    assert written.name.startswith("review-") and len(page_data(tmp_path / written)["sessions"]) == 1


def test_a_file_name_that_is_no_date_is_no_date(runner: CliRunner, tmp_path: Path) -> None:
    b = SessionBuilder(session_id="s-feb")
    b.user("first question about the parser")
    b.lines[1:] = [b.lines[1].replace('"timestamp":"2026-05-01T10:00:01.000Z",', "")]  # no entry date either
    path = b.write(tmp_path / "s" / "2026-02-30T10-00-00-000Z_s-feb.jsonl")
    page, _, _ = import_and_review(runner, tmp_path, str(path))
    assert page_data(page)["sessions"][0]["start"] is None


def test_library_call_writes_a_private_page_whatever_the_umask(runner: CliRunner, tmp_path: Path) -> None:
    page, _, _ = import_and_review(runner, tmp_path, str(SAMPLES))
    again = tmp_path / "again.html"
    old = os.umask(0o022)
    try:
        with duckdb.connect(str(tmp_path / "state" / "ledger.duckdb"), read_only=True) as db:
            assert write_review(db, again) == again
    finally:
        os.umask(old)
    assert stat.S_IMODE(again.stat().st_mode) == 0o600
    assert len(page_data(again)["sessions"]) == len(page_data(page)["sessions"])
