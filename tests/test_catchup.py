"""`import --catch-up`: what a cron job retains (session modes, the retain cursor, only changed windows)."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import SessionBuilder, invoke, read_manifest
from tests.server import Server


def session(tmp_path: Path, turns: int = 3, name: str = "s.jsonl") -> tuple[SessionBuilder, Path, Path]:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    b = SessionBuilder(cwd=str(project), session_id=f"cu-{uuid.uuid4().hex[:6]}")
    for i in range(turns):
        b.user(f"question {i} about the importer module")
        b.assistant(f"answer {i}: the parser was fixed")
    return b, b.write(tmp_path / "sessions" / name), project


def meta_path(project: Path, session_file: Path) -> Path:
    digest = hashlib.sha256(str(session_file.resolve()).encode()).hexdigest()[:16]
    return project / ".pi" / "hindsight" / "session-meta" / f"{digest}.json"


def write_cursor(project: Path, session_file: Path, cursor: dict[str, Any] | str) -> None:
    path = project / ".pi" / "hindsight" / "retain-cursors.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(str(session_file.resolve()).encode()).hexdigest()[:16]
    body = cursor if isinstance(cursor, str) else json.dumps({"version": 3, "sessions": {digest: cursor}})
    path.write_text(body)


def run(runner: CliRunner, tmp_path: Path, *args: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    manifest = tmp_path / f"m-{uuid.uuid4().hex[:6]}.jsonl"
    result = invoke(runner, "import", str(tmp_path / "sessions"), "--state", str(tmp_path / "state"),
                    "--manifest", str(manifest), "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.output), read_manifest(manifest)


@pytest.mark.parametrize(
    ("meta", "reason"),
    [
        ({"mode": "read-only"}, "session mode read-only"),
        ({"mode": "ignored"}, "session mode ignored"),
        ({"mode": "normal", "retainMode": "off"}, "session mode retain-off"),
        ("{not json", "session mode ignored"),
        ({"mode": "tools-only"}, "session mode ignored"),
    ],
)
def test_catch_up_skips_sessions_a_deliberate_import_still_takes(
    runner: CliRunner, tmp_path: Path, meta: dict[str, Any] | str, reason: str
) -> None:
    _, path, project = session(tmp_path)
    target = meta_path(project, path)
    target.parent.mkdir(parents=True)
    target.write_text(meta if isinstance(meta, str) else json.dumps(meta))
    summary, rows = run(runner, tmp_path, "--catch-up")
    assert rows == [] and summary["catch_up_skipped"] == [{"file": str(path), "reason": reason}]
    deliberate, rows = run(runner, tmp_path)
    assert deliberate["catch_up_skipped"] == [] and [r["status"] for r in rows] == ["planned"]


def test_messages_at_or_before_the_cursor_are_never_sent(runner: CliRunner, tmp_path: Path) -> None:
    _, path, project = session(tmp_path, turns=3)
    handled = "e2"  # the first answer: retained live (or skipped by /hindsight:next-opt-out)
    write_cursor(project, path, {"index": 1, "messageIds": ["e1", handled], "tailStart": 0})
    _, rows = run(runner, tmp_path, "--catch-up", "--include-content")
    content = rows[0]["content"]
    assert "question 0" not in content and "answer 0" not in content
    assert "question 1" in content and "answer 2" in content
    assert rows[0]["messages_dropped"]["handled-live"] == 2
    # Without ids the cursor's index counts the path's messages from 0.
    write_cursor(project, path, {"index": 3})
    _, rows = run(runner, tmp_path, "--catch-up", "--include-content")
    assert "question 1" not in rows[0]["content"] and "question 2" in rows[0]["content"]
    # The deliberate import takes everything.
    _, rows = run(runner, tmp_path, "--include-content")
    assert "question 0" in rows[0]["content"]


@pytest.mark.parametrize("body", ["{oops", json.dumps({"version": 1, "sessions": {}}), json.dumps([1])])
def test_an_unreadable_cursor_skips_the_session_with_a_warning(runner: CliRunner, tmp_path: Path, body: str) -> None:
    _, path, project = session(tmp_path)
    write_cursor(project, path, body)
    result = invoke(runner, "import", str(tmp_path / "sessions"), "--state", str(tmp_path / "state"), "--catch-up")
    assert result.exit_code == 0 and "skipped 1" in result.output
    summary, rows = run(runner, tmp_path, "--catch-up")
    assert rows == [] and "retain cursor" in summary["catch_up_skipped"][0]["reason"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_cursor_off_the_active_path_fails_closed(runner: CliRunner, tmp_path: Path, jobs: str) -> None:
    _, path, project = session(tmp_path)
    write_cursor(project, path, {"messageIds": ["not-here"]})
    summary, rows = run(runner, tmp_path, "--catch-up", "--jobs", jobs)  # found while planning, in a worker too
    assert rows == [] and "not on the active path" in summary["catch_up_skipped"][0]["reason"]


def test_catch_up_prints_one_summary_line_and_honours_max_seconds(runner: CliRunner, tmp_path: Path) -> None:
    session(tmp_path)
    result = invoke(runner, "import", str(tmp_path / "sessions"), "--state", str(tmp_path / "state"), "--catch-up")
    assert result.exit_code == 0 and len(result.output.strip().splitlines()) == 1
    assert result.output.startswith("catch-up ") and "would send 1" in result.output
    late, rows = run(runner, tmp_path, "--catch-up", "--max-seconds", "0")
    assert late["stopped_early"] and rows == []


@pytest.mark.timeout(600)
def test_catch_up_sends_only_the_changed_tail_window(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    monkeypatch.setenv("HINDSIGHT_BASE_URL", hindsight_server.url)
    monkeypatch.setenv("HINDSIGHT_BANK_ID", f"cu-{uuid.uuid4().hex[:8]}")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"import": {"turnsPerChunk": 2}}))
    b, path, _project = session(tmp_path, turns=5)
    first, rows = run(runner, tmp_path, "--catch-up", "--apply", "--wait", "--config", str(config))
    assert first["upload"]["documents"] == {"confirmed": 3}
    unchanged, _ = run(runner, tmp_path, "--catch-up", "--apply", "--config", str(config))
    assert unchanged["upload"]["requests"] == 0 and unchanged["unchanged_files"] == 1
    b.user("question 5 about the importer module")
    b.assistant("answer 5: the parser was fixed")
    b.write(path)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000_000))
    second, rows = run(runner, tmp_path, "--catch-up", "--apply", "--wait", "--config", str(config))
    assert second["upload"]["documents"] == {"confirmed": 1}
    sent = [r for r in rows if r["status"] == "planned"]
    assert [r["document_id"].rsplit(":", 1)[-1] for r in sent] == ["w0002"]
