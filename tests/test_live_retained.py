"""Never double what the live extension retained: against the real server, with documents shaped like the
extension's live retains."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from hindsight_batch.extension.switches import path_hashes
from hindsight_batch.sinks.hindsight import HindsightClient
from tests.conftest import SessionBuilder, invoke, read_manifest
from tests.extension_shapes import luxus_cursor, needs_node
from tests.server import Server


def wait_done(client: HindsightClient, bank: str, operation: str | None) -> None:
    deadline = time.monotonic() + 120
    while operation and time.monotonic() < deadline:
        if client.operation(bank, operation).get("status") in ("completed", "failed", "not_found"):
            return
        time.sleep(0.5)


def live_retain(client: HindsightClient, bank: str, document_id: str, tags: list[str]) -> None:
    item = {"content": '{"role":"user","text":"an early turn, retained live"}', "context": "pi: demo",
            "document_id": document_id, "tags": tags, "update_mode": "append"}
    wait_done(client, bank, client.retain(bank, [item], str(uuid.uuid4())).operation_id)


def session(tmp_path: Path, cwd: Path, sid: str) -> Path:
    """Two turns before the live retain (2026-05-01) and one after it (2099)."""
    b = SessionBuilder(cwd=str(cwd), session_id=sid)
    b.user("EARLY-ONE: plan the uploader retries.")
    b.assistant("Planned.")
    b.user("EARLY-TWO: write the retry test.")
    b.assistant("Written.")
    b.user("LATE-THREE: after the live retain, add jitter.")
    b.assistant("Added jitter.")
    lines = b.lines[:1] + [
        json.dumps({**json.loads(line), "timestamp": "2099-01-01T00:00:00.000Z"}) if n >= 5 else line
        for n, line in enumerate(b.lines[1:], 1)]
    path = tmp_path / "sessions" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def run(runner: CliRunner, tmp_path: Path, *args: str) -> tuple[list[dict], dict]:  # type: ignore[type-arg]
    manifest = tmp_path / f"m-{uuid.uuid4().hex[:6]}.jsonl"
    result = invoke(runner, "import", *args, "--manifest", str(manifest), "--include-content", "--json",
                    "--state", str(tmp_path / f"st-{uuid.uuid4().hex[:6]}"))
    assert result.exit_code == 0, result.stderr
    return read_manifest(manifest), json.loads(result.output)


def test_hindsight_pi_live_retains_are_not_doubled(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    monkeypatch.setenv("HINDSIGHT_BASE_URL", hindsight_server.url)
    bank = f"live-{uuid.uuid4().hex[:8]}"
    (isolated_home / ".hindsight").mkdir()
    (isolated_home / ".hindsight" / "config.json").write_text(json.dumps({"bankId": bank, "host": {"pi": {}}}))
    cwd = tmp_path / "proj"
    cwd.mkdir()
    retained, fresh = session(tmp_path, cwd, "s-live"), session(tmp_path, cwd, "s-fresh")
    tags = ["harness:pi", "session:s-live", "parent:s-live", f"cwd:{cwd}", "basedir:proj", "project:proj",
            "store_method:auto"]
    with hindsight_server.client() as client:
        live_retain(client, bank, "s-live", tags)
        # Imported documents (store_method:import) are not live retains.
        live_retain(client, bank, "an-earlier-import:s-fresh", ["session:s-fresh", "store_method:import"])

    rows, summary = run(runner, tmp_path, str(retained), str(fresh), "--apply", "--wait")
    assert summary["live_retained"] == {"after": 1, "none": 1}
    by_session = {r["session_id"]: r for r in rows}
    late = by_session["s-live"]
    assert "LATE-THREE" in late["content"] and "EARLY" not in late["content"]
    assert late["live_retained"]["decision"] == "after" and late["live_retained"]["live_documents"] == ["s-live"]
    assert late["messages_dropped"].get("handled-live") == 4
    assert "EARLY-ONE" in by_session["s-fresh"]["content"]
    with hindsight_server.client() as client:
        stored = {d["id"] for d in client.documents(bank)}
    assert "pi-import:s-live:project:main:w0000" in stored

    rows, summary = run(runner, tmp_path, str(retained), str(fresh), "--live-retained", "skip")
    assert [r["session_id"] for r in rows] == ["s-fresh"] and summary["sessions_skipped_total"] == 1
    rows, summary = run(runner, tmp_path, str(retained), "--live-retained", "include")
    assert "EARLY-ONE" in rows[0]["content"] and summary["live_retained"] == {"include": 1}


@needs_node
def test_pi_hindsight_live_document_and_cursor(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    monkeypatch.setenv("HINDSIGHT_BASE_URL", hindsight_server.url)
    bank = f"ph-{uuid.uuid4().hex[:8]}"
    (isolated_home / ".pi" / "agent").mkdir(parents=True)
    (isolated_home / ".pi" / "agent" / "hindsight.jsonc").write_text(
        '{ // pi-hindsight\n "banks": {"project": {"bankId": "' + bank + '",}},\n}')
    cwd = tmp_path / "proj"
    cwd.mkdir()
    path = session(tmp_path, cwd, "s-ph")
    with hindsight_server.client() as client:
        live_retain(client, bank, f"pi-session:{path_hashes(path)[-1]}", ["source:pi", "harness:pi"])
    # Its cursor, built over the first run's messages (e1, e2; no ids in pi 0.73.1), reaches e2 by content: only
    # what follows is imported.
    (cwd / ".pi" / "hindsight").mkdir(parents=True)
    first_run = [json.loads(line)["message"] for line in path.read_text().splitlines()[1:3]]
    (cwd / ".pi" / "hindsight" / "retain-cursors.json").write_text(json.dumps(
        {"version": 3, "sessions": {path_hashes(path)[-1]: luxus_cursor(first_run)}}))
    rows, summary = run(runner, tmp_path, str(path))
    assert summary["live_retained"] == {"after": 1}
    assert "EARLY-TWO" in rows[0]["content"] and "EARLY-ONE" not in rows[0]["content"]
    assert "cursor" in rows[0]["live_retained"]["note"]


def test_a_dry_run_without_a_server_says_it_could_not_check(runner: CliRunner, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_BASE_URL", "http://127.0.0.1:9")  # discard port: nothing listens
    cwd = tmp_path / "proj"
    cwd.mkdir()
    path = session(tmp_path, cwd, "s-dry")
    rows, summary = run(runner, tmp_path, str(path))
    assert summary["live_retained"] == {"unchecked": 1} and summary["live_retained_unchecked"]
    assert rows[0]["live_retained"]["decision"] == "unchecked" and "EARLY-ONE" in rows[0]["content"]
    result = invoke(runner, "import", str(path), "--state", str(tmp_path / "s2"))
    assert "COULD NOT CHECK" in result.stderr
    assert "no answer from http://127.0.0.1:9" in summary["live_retained_unchecked"]


def test_a_dry_run_without_a_server_does_not_load_the_http_client(tmp_path: Path) -> None:
    """No server listening: a plain connection attempt finds out before httpx is loaded (a dry run stays cheap)."""
    cwd = tmp_path / "proj"
    cwd.mkdir()
    path = session(tmp_path, cwd, "s-cheap")
    probe = (
        "import json, sys\n"
        "from hindsight_batch.cli import cli\n"
        f"cli.main(['import', {str(path)!r}, '--state', {str(tmp_path / 'state')!r}, '-q'],"
        " standalone_mode=False)\n"
        "print(json.dumps('httpx' in sys.modules))\n"
    )
    env = {**os.environ, "HINDSIGHT_BASE_URL": "http://127.0.0.1:9", "HOME": str(tmp_path)}
    env = {k: v for k, v in env.items() if "proxy" not in k.lower()}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env,
                          check=True)
    assert done.stdout.strip() == "false", done.stdout + done.stderr


def test_a_live_cut_off_joins_catch_up_cursor_rules() -> None:
    from hindsight_batch.extension.catchup import CatchUpVerdict
    from hindsight_batch.importing.live import LiveDecision

    after = LiveDecision("after", ("s",), "2026-06-01T00:00:00Z")
    assert after.handled(None) == CatchUpVerdict(True, handled_until="2026-06-01T00:00:00Z")
    assert after.handled(CatchUpVerdict(True)) == CatchUpVerdict(True, handled_until="2026-06-01T00:00:00Z")
    cursor = CatchUpVerdict(True, handled_id="e7")  # the extension's cursor reaches the message: it wins; the time
    assert after.handled(cursor) == cursor._replace(handled_until="2026-06-01T00:00:00Z")  # only if it is off the path
    assert LiveDecision("include").handled(None) is None and LiveDecision("none").handled(cursor) == cursor
