"""What hindsight-pi already holds by its own means is never sent again: the records still in its queue (``flush``
sends them) and its backfill documents (``/hindsight:parse-and-upsert-session``,
``/hindsight:upsert-historical-sessions``), whose text lists the entries they hold."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import SessionBuilder, invoke, read_manifest
from tests.extension_shapes import hpi_queue_record, messages_of
from tests.server import Server
from tests.test_live_retained import wait_done


def four_turns(tmp_path: Path, sid: str, name: str | None = None) -> tuple[SessionBuilder, Path, list[str]]:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    b = SessionBuilder(cwd=str(project), session_id=sid)
    ids = []
    for i in range(4):
        ids.append(b.user(f"TURN-{i} question about the importer module"))
        ids.append(b.assistant(f"TURN-{i} answer: the parser was fixed"))
    return b, b.write(tmp_path / "sessions" / (name or f"{sid}.jsonl")), ids


def run(runner: CliRunner, tmp_path: Path, *args: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    manifest = tmp_path / f"m-{uuid.uuid4().hex[:6]}.jsonl"
    result = invoke(runner, "import", str(tmp_path / "sessions"), "--state", str(tmp_path / f"st-{uuid.uuid4().hex}"),
                    "--manifest", str(manifest), "--json", "--include-content", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.output), read_manifest(manifest)


def test_messages_still_in_the_extensions_queue_are_left_for_flush(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_BASE_URL", "http://127.0.0.1:9")  # no server: the queue is local
    b, _, ids = four_turns(tmp_path, "q-1")
    queue = isolated_home / ".hindsight" / "pi-queues" / "q-1.auto.jsonl"
    queue.parent.mkdir(parents=True)
    stamps = [json.loads(line)["timestamp"] for line in b.lines[-2:]]
    messages = messages_of(b, ids[-2:])
    # hindsight-pi's sanitizeCredentials may rewrite a text (extensions/retain/prepare.ts): then its role and time
    # (written within milliseconds of the entry) place it.
    messages[0] = {**messages[0], "content": [{"type": "text", "text": "TURN-3 question about the [redacted]"}]}
    records = [hpi_queue_record("q-1", m, at) for m, at in zip(messages, stamps, strict=True)]
    records.append({"sessionId": "q-1", "content": "{not json"})
    queue.write_text("".join(json.dumps(r) + "\n" for r in records))
    summary, rows = run(runner, tmp_path)
    content = "".join(r["content"] or "" for r in rows)
    assert "TURN-2" in content and "TURN-3" not in content
    assert summary["messages_dropped"]["handled-live"] == 2
    assert summary["queued_by_extension"] == [{"file": str((tmp_path / "sessions" / "q-1.jsonl").resolve()),
                                               "queue": str(queue), "left_out": 2, "unplaced": 1}]
    assert "flush sends them" in rows[0]["queued"]
    _, rows = run(runner, tmp_path, "--live-retained", "include")  # no check at all: everything
    assert "TURN-3" in "".join(r["content"] or "" for r in rows)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("command", ["parse-and-upsert-session", "upsert-historical-sessions", "luxus-import"])
def test_the_extensions_own_backfill_is_recognised_by_its_entries(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server, command: str
) -> None:
    """extensions/commands.ts: both commands retain JSON.stringify(records) of the message entries ({id, parentId,
    timestamp, type, message}), update_mode replace, tags harness:pi, session:<document id>, store_method:import;
    the document id is the session id, or the file's name without .jsonl."""
    monkeypatch.setenv("HINDSIGHT_BASE_URL", hindsight_server.url)
    bank = f"bf-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HINDSIGHT_BANK_ID", bank)
    sid = f"0196-{uuid.uuid4().hex[:8]}"
    name = f"2026-05-01T10-00-00-000Z_{sid}.jsonl"
    b, _, _ = four_turns(tmp_path, sid, name)
    entries = [json.loads(line) for line in b.lines[1:7]]  # the first three turns, when the command ran
    records = [{k: e[k] for k in ("id", "parentId", "timestamp", "type", "message")} for e in entries]
    document = sid if command == "parse-and-upsert-session" else name.removesuffix(".jsonl")
    item = {"content": json.dumps(records, separators=(",", ":")), "document_id": document, "update_mode": "replace",
            "context": f"pi session {document}", "tags": ["harness:pi", f"session:{document}", "store_method:import"]}
    if command == "luxus-import":
        # pi-hindsight extensions/imports/import-sessions.ts buildImportBranch: JSON.stringify({source, sessionFile,
        # cwd, sessionId, branchLeafId, messages: each message's data, id kept}, null, 2); importDocumentId; its tags
        leaf = entries[-1]["id"]
        document = f"pi-import:{sid}:leaf:{leaf}"
        content = {"source": "pi-session-import", "sessionFile": str(tmp_path / "sessions" / name),
                   "cwd": str(tmp_path / "proj"), "sessionId": sid, "branchLeafId": leaf,
                   "messages": [{"id": e["id"], "parentId": e["parentId"], "timestamp": e["timestamp"],
                                 **e["message"]} for e in entries]}
        item = {"content": json.dumps(content, indent=2), "document_id": document, "update_mode": "replace",
                "context": f"Historical Pi session import from {name}, branch {leaf}",
                "tags": ["source:pi", "harness:pi", "project:proj", f"session:{sid}", f"branch:{leaf}",
                         "import:historical", "imported:true", f"document:{document}"]}
    with hindsight_server.client() as client:
        wait_done(client, bank, client.retain(bank, [item], str(uuid.uuid4())).operation_id)
    summary, rows = run(runner, tmp_path)
    content = "".join(r["content"] or "" for r in rows)
    assert "TURN-3" in content and "TURN-2" not in content and "TURN-0" not in content
    assert summary["messages_dropped"]["handled-live"] == 6 and summary["live_retained"] == {"after": 1}
    note = rows[0]["live_retained"]
    assert "matched by content" in note["note"] and document in note["live_documents"]
