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
from tests.extension_shapes import luxus_cursor, luxus_meta, messages_of, needs_node
from tests.server import Server


def session(tmp_path: Path, turns: int = 3, name: str = "s.jsonl") -> tuple[SessionBuilder, Path, Path]:
    """A session of ``turns`` turns in ``tmp_path/proj``, written to ``tmp_path/sessions/<name>``."""
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
        (luxus_meta(mode="read-only"), "pi-hindsight session mode read-only"),
        (luxus_meta(mode="ignored"), "pi-hindsight session mode ignored"),
        (luxus_meta(retainMode="off", retained=False), "pi-hindsight session retain off (retainMode off)"),
        (luxus_meta(retained=False), "pi-hindsight session retain off (retained false)"),  # retained:false alone
        ("{not json", "is not JSON: counts as ignored (fail closed)"),
        # isSessionMemoryMetaRecord: a record missing a field, or with a mode or switch it does not know, is
        # failClosedSessionMemoryMeta (mode ignored)
        ({"mode": "read-only"}, "is not a valid record: counts as ignored (fail closed)"),
        (luxus_meta(mode="tools-only"), "is not a valid record: counts as ignored (fail closed)"),
        (luxus_meta(retainMode="paused"), "is not a valid record: counts as ignored (fail closed)"),
        (luxus_meta(nextRetainMode="off"), "pending /hindsight:next-opt-out"),
    ],
)
def test_catch_up_skips_sessions_a_deliberate_import_still_takes(
    runner: CliRunner, tmp_path: Path, meta: dict[str, Any] | str, reason: str
) -> None:
    _, path, project = session(tmp_path)
    target = meta_path(project, path)
    target.parent.mkdir(parents=True)
    target.write_text(meta if isinstance(meta, str) else json.dumps(meta))
    summary, rows = run(runner, tmp_path, "--catch-up", "--include-content")
    # Its id and the reason only: one row, no text, no entry ids.
    assert [(r["status"], r["session_id"], r["switch"]["switch"]) for r in rows] == [
        ("switched-off", summary["switched_off"][0]["session_id"], "luxus-session")]
    assert "question" not in json.dumps(rows) and rows[0]["first_entry_id"] == "" and not rows[0]["fingerprints"]
    assert reason in summary["switched_off"][0]["reason"] and summary["switched_off_skipped"] == 1
    line = invoke(runner, "import", str(tmp_path / "sessions"), "--state", str(tmp_path / "state"), "--catch-up")
    assert "switched off 1" in line.output
    # A deliberate import takes the session (seed 001: import is allowed in every mode) and says a switch covers it;
    # the one-turn opt-out does not even count for it (seed 004).
    deliberate, rows = run(runner, tmp_path)
    assert [r["status"] for r in rows] == ["planned"]
    if "next-opt-out" in reason:
        assert deliberate["switched_off"] == []
        return
    assert deliberate["switched_off"][0]["respected"] is False and rows[0]["switch"]["switch"] == "luxus-session"
    respected, rows = run(runner, tmp_path, "--respect-switches")
    assert [r["status"] for r in rows] == ["switched-off"] and respected["switched_off_skipped"] == 1


def test_a_valid_normal_meta_lets_the_session_through_with_its_tags(runner: CliRunner, tmp_path: Path) -> None:
    _, path, project = session(tmp_path)
    target = meta_path(project, path)
    target.parent.mkdir(parents=True)
    # normalizeSessionTags: strings without control characters, trimmed, 1 to 80 characters, once each
    target.write_text(json.dumps(luxus_meta(tags=[" team-a ", "team-a", "x" * 81, "bad\u0007", 5, "release"])))
    summary, rows = run(runner, tmp_path, "--catch-up")
    assert summary["switched_off"] == [] and [r["status"] for r in rows] == ["planned"]
    assert {"team-a", "release"} <= set(rows[0]["tags"]) and not any(t.startswith("x" * 80) for t in rows[0]["tags"])


def test_the_meta_is_found_under_the_path_pi_spells_when_home_is_a_link(
    runner: CliRunner, tmp_path: Path, isolated_home: Path
) -> None:
    """pi joins ~/.pi/agent/sessions from $HOME and never resolves links; luxus hashes that spelling."""
    real = tmp_path / "elsewhere" / "dot-pi"
    (real / "agent" / "sessions" / "--proj--").mkdir(parents=True)
    (isolated_home / ".pi").symlink_to(real)
    project = tmp_path / "proj"
    project.mkdir()
    b = SessionBuilder(cwd=str(project), session_id="cu-link")
    b.user("question 0 about the importer module")
    b.assistant("answer 0: the parser was fixed")
    spelled = isolated_home / ".pi" / "agent" / "sessions" / "--proj--" / "s.jsonl"
    b.write(spelled)
    digest = hashlib.sha256(str(spelled).encode()).hexdigest()[:16]  # not resolved
    assert digest != hashlib.sha256(str(spelled.resolve()).encode()).hexdigest()[:16]
    target = project / ".pi" / "hindsight" / "session-meta" / f"{digest}.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(luxus_meta(mode="ignored")))
    manifest = tmp_path / "m.jsonl"
    result = invoke(runner, "import", str(isolated_home / ".pi" / "agent" / "sessions"), "--catch-up", "--json",
                    "--manifest", str(manifest), "--state", str(tmp_path / "state"))
    assert result.exit_code == 0, result.stderr
    assert [r["status"] for r in read_manifest(manifest)] == ["switched-off"]


def three_turns(tmp_path: Path) -> tuple[SessionBuilder, Path, Path, list[str]]:
    b, _, project = session(tmp_path, turns=0)
    ids = []
    for i in range(3):
        ids.append(b.user(f"question {i} about the importer module"))
        ids.append(b.assistant(f"answer {i}: the parser was fixed"))
    return b, b.write(tmp_path / "sessions" / "s.jsonl"), project, ids


@needs_node
def test_the_real_cursor_shape_is_matched_by_content(runner: CliRunner, tmp_path: Path) -> None:
    """pi 0.73.1's agent_end gives messages without ids: messageIds are "" and index counts within the last run
    (here the second run: question 1 and its answer, index 1). Never an entry id; the fingerprints find it."""
    b, path, project, ids = three_turns(tmp_path)
    cursor = luxus_cursor(messages_of(b, ids[2:4]))
    assert cursor["messageIds"] == ["", ""] and cursor["index"] == 1
    write_cursor(project, path, cursor)
    summary, rows = run(runner, tmp_path, "--catch-up", "--include-content")
    content = rows[0]["content"]
    assert "question 1" not in content and "answer 1" not in content and "question 2" in content
    assert rows[0]["messages_dropped"]["handled-live"] == 4 and summary["cursor_fallbacks"] == []
    # The deliberate import takes everything.
    _, rows = run(runner, tmp_path, "--include-content")
    assert "question 0" in rows[0]["content"]


@pytest.mark.parametrize("body", ["{oops", json.dumps({"version": 3, "sessions": []}), json.dumps([1]),
                                  json.dumps({"version": 3, "sessions": {"HASH": {"index": 1, "messageIds": ["e2"]}}}),
                                  json.dumps({"version": 3, "sessions": {"HASH": {"index": 0, "tailStart": 0,
                                             "messageIds": [""], "fingerprints": ["0" * 64]}}})])
def test_an_unusable_cursor_never_skips_the_session(runner: CliRunner, tmp_path: Path, body: str) -> None:
    _, path, project, _ = three_turns(tmp_path)
    write_cursor(project, path, body.replace("HASH", hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]))
    result = invoke(runner, "import", str(tmp_path / "sessions"), "--state", str(tmp_path / "state"), "--catch-up")
    assert result.exit_code == 0 and "would send 1" in result.output and "cursors not used 1" in result.output
    summary, rows = run(runner, tmp_path, "--catch-up", "--include-content")
    assert "question 0" in rows[0]["content"] and "not used" in rows[0]["cursor"]
    assert summary["cursor_fallbacks_total"] == 1 and summary["catch_up_skipped"] == []


@needs_node
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_cursor_off_the_active_path_falls_back(runner: CliRunner, tmp_path: Path, jobs: str) -> None:
    b, _, project, ids = three_turns(tmp_path)
    b.user("question 9 on a branch", parent=ids[1])  # a new leaf: the earlier turns 1 and 2 are off the path
    branch = b.assistant("answer 9 on a branch")
    path = b.write(tmp_path / "sessions" / "s.jsonl")
    write_cursor(project, path, luxus_cursor(messages_of(b, [ids[4], ids[5]])))  # the last run of the other branch
    assert branch
    summary, rows = run(runner, tmp_path, "--catch-up", "--jobs", jobs, "--include-content")  # in a worker too
    assert "question 0" in rows[0]["content"] and "question 9" in rows[0]["content"]
    assert "not on the active path" in summary["cursor_fallbacks"][0]["note"] and "cursor" in rows[0]


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


@needs_node
def test_a_fingerprint_is_the_one_javascript_makes() -> None:
    """retain-cursor.ts messageFingerprint, made by Node, equals ours for text JSON.stringify writes its own way
    (non-ASCII, U+2028, control characters, quotes, backslashes, astral characters, fractions, null, booleans)."""
    from hindsight_batch.extension.catchup import fingerprint

    messages = [
        {"role": "user", "content": [{"type": "text", "text": 'é ü \u2028 \x01\x1f "q" \\ 😀 <tag> </script>'}],
         "timestamp": 1795825823425},
        {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read",
                                           "arguments": {"limit": 0.5, "offset": 123456.789, "x": None}}],
         "api": "openai-completions", "model": "m", "stopReason": "toolUse", "timestamp": 1795825823426},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "ok"}],
         "isError": False, "timestamp": 1795825823427},
        {"role": "user", "content": "a plain string", "timestamp": 1795825823428, "id": 7},
    ]
    assert luxus_cursor(messages)["fingerprints"] == [fingerprint(m) for m in messages]
