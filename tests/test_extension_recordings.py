"""What the live extensions really write (issue 36, item 7), read from the recordings that
scripts/record_extensions.py made by running each extension's own code inside pi 0.73.1 against a real server
(tests/fixtures/extensions/<ext>/PROVENANCE.md). Each test states one fact the batch paths rely on; if a
re-recording changes it, the test says which.

Paths in the recordings are normalised: ``/HOME`` is the private home, ``/PROJECT`` the project (a git repository
whose origin is ``git@example.invalid:acme/<bank>.git``), ``--PROJECT--`` pi's session folder for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

RECORDINGS = Path(__file__).resolve().parent / "fixtures" / "extensions"
HPI = RECORDINGS / "hpi"
PROBE = RECORDINGS / "pi-probe" / "symlinked-home"  # pi's own side of luxus's facts (luxus could not be run)
HPI_SCENARIOS = sorted(p.name for p in HPI.iterdir() if p.is_dir())


def session_files(scenario: str) -> list[Path]:
    return sorted((HPI / scenario / "sessions").rglob("*.jsonl"))


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def only_session(scenario: str) -> tuple[str, list[dict[str, Any]]]:
    (path,) = session_files(scenario)
    lines = entries(path)
    return str(lines[0]["id"]), lines


def server(scenario: str) -> dict[str, Any]:
    banks: dict[str, Any] = json.loads((HPI / scenario / "server.json").read_text())
    (bank,) = banks.values()
    return dict(bank)


def documents(scenario: str) -> list[dict[str, Any]]:
    return list(server(scenario).get("documents") or [])


def requests(scenario: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (HPI / scenario / "requests.jsonl").read_text().splitlines()]


def retained_items(scenario: str) -> list[dict[str, Any]]:
    return [item for r in requests(scenario) if r["method"] == "POST" and r["path"].endswith("/memories")
            for item in r["body"]["items"]]


def queue(scenario: str) -> list[dict[str, Any]]:
    files = sorted((HPI / scenario / "hindsight-home" / "pi-queues").glob("*.auto.jsonl"))
    return [json.loads(line) for f in files for line in f.read_text().splitlines()]


def texts(lines: list[dict[str, Any]], role: str) -> list[str]:
    return [b["text"] for e in lines if e["type"] == "message" and e["message"]["role"] == role
            for b in e["message"]["content"] if b.get("type") == "text"]


def meta_entries(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in lines if e["type"] == "custom" and e.get("customType") == "hindsight-meta"]


def test_every_recording_is_normalised_and_keyless() -> None:
    assert {"live-k2", "complete", "off-session", "off-project", "tags", "backfill-session", "backfill-historical",
            "queued", "recall-persisted"} <= set(HPI_SCENARIOS)
    for path in RECORDINGS.rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert "/tmp/" not in text and "/root" not in text and "scripted-model-needs-no-key" not in text, path
    for path in [*HPI.rglob("*.jsonl"), *PROBE.rglob("*.jsonl")]:
        if "sessions" in path.parts:
            header = entries(path)[0]
            assert header["type"] == "session" and header["cwd"] == "/PROJECT"
            assert path.name.endswith(f"_{header['id']}.jsonl")


def test_hpi_live_turns_wait_in_the_queue_until_pi_exits() -> None:
    """hpi queues on message_end and flushes only at session shutdown/switch/fork/compact: after k=2 turns the
    server holds nothing for the session and the queue holds the turns' user and assistant text."""
    session_id, lines = only_session("live-k2")
    assert documents("live-k2") == []
    records = queue("live-k2")
    contents = [json.loads(r["content"]) for r in records]
    assert [c["message"]["role"] for c in contents] == ["user", "assistant", "user", "assistant"]
    # a tool-call-only assistant message and the tool result are not queued; no entry id is carried
    assert [c["message"]["content"][0]["text"] for c in contents[::2]] == texts(lines, "user")
    assert all(set(c) == {"message", "timestamp"} for c in contents)
    for record in records:
        assert record["document_id"] == record["sessionId"] == session_id
        assert record["update_mode"] == "append" and record["bankId"] == "hpi-live"
        assert record["timestamp"] == lines[0]["timestamp"]  # the session start, for every record
        assert {"harness:pi", f"session:{session_id}", f"parent:{session_id}", "cwd:/PROJECT", "basedir:PROJECT",
                "project:PROJECT", "store_method:auto"} == set(record["tags"])
        assert record["metadata"] == {"source": "pi", "kind": "session-message", "origin": "auto", "workspace": "pi"}


def test_hpi_complete_session_is_one_document_named_by_the_session_id() -> None:
    session_id, lines = only_session("complete")
    assert queue("complete") == []  # the flush deleted the queue file
    (doc,) = documents("complete")
    assert doc["id"] == session_id
    stored = [json.loads(line) for line in doc["original_text"].splitlines()]
    assert [s["message"]["role"] for s in stored] == ["user", "assistant"] * 3
    assert [s["message"]["content"][0]["text"] for s in stored[::2]] == texts(lines, "user")
    assert "store_method:auto" in doc["tags"] and f"session:{session_id}" in doc["tags"]
    assert doc["retain_params"]["context"] == "pi: dir_PROJECT_52b5cd65"  # its session name, also a session_info
    # hindsight-client 0.4.x drops update_mode: the server never sees "append"
    items = retained_items("complete")
    assert len(items) == 6 and all("update_mode" not in item for item in items)


def test_hpi_toggle_retain_writes_a_meta_entry_and_later_turns_are_not_retained() -> None:
    session_id, lines = only_session("off-session")
    (meta,) = meta_entries(lines)
    assert meta["data"] == {"retained": False, "tags": []}
    assert set(meta) == {"type", "customType", "data", "id", "parentId", "timestamp"}
    (doc,) = documents("off-session")
    assert doc["id"] == session_id
    stored = doc["original_text"]
    first, second = texts(lines, "user")
    assert first in stored and second not in stored


def test_hpi_project_switches() -> None:
    config = json.loads((HPI / "off-project" / "project" / ".hindsight" / "config.json").read_text())
    assert config == {"host": {"pi": {"enabled": False}}}
    assert requests("off-project") == [] and "error" in server("off-project")  # never connected: no bank
    assert queue("off-project") == []
    # saveMessages:false connects (the bank is created) but queues and stores nothing
    assert [r["method"] for r in requests("off-project-save-messages")][:2] == ["GET", "PUT"]
    assert documents("off-project-save-messages") == [] and queue("off-project-save-messages") == []


def test_hpi_session_tags_accumulate_in_meta_and_ride_on_later_records() -> None:
    session_id, lines = only_session("tags")
    assert [m["data"] for m in meta_entries(lines)] == [{"retained": True, "tags": ["alpha"]},
                                                        {"retained": True, "tags": ["alpha", "beta"]}]
    items = retained_items("tags")
    assert [("alpha" in i["tags"], "beta" in i["tags"]) for i in items] == [(False, False)] * 2 + [(True, True)] * 2
    (doc,) = documents("tags")
    assert doc["id"] == session_id and {"alpha", "beta"} <= set(doc["tags"])  # the document's tags are the union


def test_hpi_parse_and_upsert_session_replaces_the_live_document_with_an_import() -> None:
    session_id, lines = only_session("backfill-session")
    assert [m["data"]["retained"] for m in meta_entries(lines)] == [False, True]
    (doc,) = documents("backfill-session")
    assert doc["id"] == session_id
    assert sorted(doc["tags"]) == sorted(["harness:pi", f"session:{session_id}", "store_method:import"])
    assert doc["retain_params"]["context"] == f"pi session {session_id}"
    records = json.loads(doc["original_text"])  # one JSON array of every message entry, ids included
    message_entries = [e for e in lines if e["type"] == "message"]
    assert [r["id"] for r in records] == [e["id"] for e in message_entries]
    assert all(set(r) == {"id", "parentId", "timestamp", "type", "message"} for r in records)
    assert "toolResult" in [r["message"]["role"] for r in records]


def test_hpi_upsert_historical_sessions_names_documents_after_the_files() -> None:
    files = session_files("backfill-historical")
    assert len(files) == 2
    docs = {d["id"]: d for d in documents("backfill-historical")}
    assert set(docs) == {f.name.removesuffix(".jsonl") for f in files}  # "<timestamp>_<uuid>", not the session id
    for path in files:
        name = path.name.removesuffix(".jsonl")
        doc = docs[name]
        assert sorted(doc["tags"]) == sorted(["harness:pi", f"session:{name}", "store_method:import"])
        assert doc["retain_params"]["context"] == f"pi historical session {name}"
        assert [r["id"] for r in json.loads(doc["original_text"])] == [
            e["id"] for e in entries(path) if e["type"] == "message"]


def test_hpi_failed_flush_leaves_the_records_queued() -> None:
    session_id, _lines = only_session("queued")
    assert documents("queued") == []
    records = queue("queued")
    assert len(records) == 4 and {r["document_id"] for r in records} == {session_id}
    assert not any(r["path"].endswith("/memories") for r in requests("queued"))


def test_hpi_persisted_recall_shapes() -> None:
    first, second = (entries(p) for p in session_files("recall-persisted"))
    assert not [e for e in first if e["type"] == "custom_message"]
    (recall,) = [e for e in second if e["type"] == "custom_message"]
    assert recall["customType"] == "hindsight-recall" and recall["display"] is False
    assert "<hindsight_memories>" in recall["content"]
    assert set(recall["details"]) == {"bankId", "query"}
    # 0.3.1 with indicatorsInContext persisted its indicators, the recalled previews in details
    old = [e for p in session_files("recall-status-0.3.1") for e in entries(p) if e["type"] == "custom_message"]
    kinds = [e["customType"] for e in old]
    assert "hindsight-recall-status" in kinds and "hindsight-retain-status" in kinds
    status = next(e for e in old if e["customType"] == "hindsight-recall-status")
    assert status["display"] is True and status["details"]["previews"]
    # and it retained per turn, under server-made ids, not one document per session
    ids = {p.name.split("_")[1].removesuffix(".jsonl") for p in session_files("recall-status-0.3.1")}
    docs = documents("recall-status-0.3.1")
    assert len(docs) == 2 and not ids & {d["id"] for d in docs}
    assert all("kind:turn-summary" in d["tags"] for d in docs)


@pytest.mark.parametrize("scenario", ["no-config", "server-1.1-profile-gone"])
def test_hpi_retains_nothing_without_config_or_on_a_1_1_server(scenario: str) -> None:
    """No config file and no HINDSIGHT_* variable: hpi is disabled. On hindsight-api 1.1.0 its bank check
    (GET .../profile) answers 410, which hpi takes for a failure: it stays offline and queues nothing."""
    assert queue(scenario) == [] and "error" in server(scenario)
    assert [(r["path"].rsplit("/", 1)[-1], r["status"]) for r in requests(scenario)] == (
        [] if scenario == "no-config" else [("profile", 410)])


def test_pi_spells_the_session_path_through_a_symlinked_pi_folder() -> None:
    """``~/.pi`` linked to /PI-TARGET: pi hands extensions the path joined from the home folder, unresolved
    (luxus hashes this spelling for its session meta key and cursor key)."""
    probe = [json.loads(line) for line in (PROBE / "probe.jsonl").read_text().splitlines()]
    (path,) = sorted((PROBE / "sessions").rglob("*.jsonl"))
    spelled = f"/HOME/.pi/agent/sessions/--PROJECT--/{path.name}"
    assert {p["sessionFile"] for p in probe if "sessionFile" in p} == {spelled}
    assert probe[0]["event"] == "session_start" and probe[0]["homedir"] == "/HOME"


def test_pi_agent_end_messages_carry_no_entry_ids_and_cover_the_last_run_only() -> None:
    """What luxus builds its v3 cursor from: agent_end's messages have no ``id`` (so its messageIds are "") and
    hold only the run that just ended (so its index counts within that run)."""
    probe = [json.loads(line) for line in (PROBE / "probe.jsonl").read_text().splitlines()]
    ends = [p for p in probe if p["event"] == "agent_end"]
    assert [len(e["messages"]) for e in ends] == [4, 2]  # a tool-call run, then a plain one
    assert all("id" not in m["keys"] for e in ends for m in e["messages"])
    (path,) = sorted((PROBE / "sessions").rglob("*.jsonl"))
    session = [e for e in entries(path) if e["type"] == "message"]
    assert [m["role"] for e in ends for m in e["messages"]] == [e["message"]["role"] for e in session]
    assert [m["timestamp"] for e in ends for m in e["messages"]] == [e["message"]["timestamp"] for e in session]
    assert ends[-1]["branchEntryIds"] == [e["id"] for e in session]  # the ids exist only in the session


def test_hpi_second_flush_replaces_the_first() -> None:
    """A resumed session flushes again under the same document id without update_mode: the server keeps only the
    last flush's turns, the earlier ones are lost (they are in the session file only)."""
    session_id, lines = only_session("resumed")
    flushes = [r["body"]["items"] for r in requests("resumed") if r["path"].endswith("/memories")]
    assert [len(items) for items in flushes] == [4, 2]
    (doc,) = documents("resumed")
    assert doc["id"] == session_id
    first, second, third = texts(lines, "user")
    assert third in doc["original_text"] and first not in doc["original_text"] and second not in doc["original_text"]


def test_hpi_parent_tag_names_the_parent_file_or_the_session_itself() -> None:
    parent_path, child_path = session_files("new-session-with-parent")
    parent, child = entries(parent_path)[0], entries(child_path)[0]
    assert child["parentSession"] == f"/HOME/.pi/agent/sessions/--PROJECT--/{parent_path.name}"
    docs = {d["id"]: d for d in documents("new-session-with-parent")}
    assert f"parent:{parent['id']}" in docs[parent["id"]]["tags"]  # no parent: the session's own uuid
    assert f"parent:{parent_path.name.removesuffix('.jsonl')}" in docs[child["id"]]["tags"]  # <timestamp>_<uuid>


def test_hpi_with_only_the_base_url_variable_uses_its_defaults() -> None:
    """No config file but HINDSIGHT_BASE_URL: enabled, bank per-repo (the origin's last segment)."""
    assert not (HPI / "env-only" / "hindsight-home").exists()
    (bank,) = json.loads((HPI / "env-only" / "server.json").read_text())
    assert bank == "hpi-env-only"  # origin git@example.invalid:acme/hpi-env-only.git
    session_id, _lines = only_session("env-only")
    assert [d["id"] for d in documents("env-only")] == [session_id]


def test_hpi_explicit_retain_is_a_separate_document_under_a_server_made_id() -> None:
    """The model's hindsight_retain call stores the given text alone (no document id: the server makes one, tags
    kind:explicit); the session document still holds the turn around it."""
    session_id, lines = only_session("explicit-retain")
    call = next(b for e in lines if e["type"] == "message" and e["message"]["role"] == "assistant"
                for b in e["message"]["content"] if b.get("type") == "toolCall")
    assert call["name"] == "hindsight_retain"
    docs = {d["id"]: d for d in documents("explicit-retain")}
    (explicit_id,) = set(docs) - {session_id}
    explicit = docs[explicit_id]
    assert explicit["original_text"] == call["arguments"]["content"]
    assert sorted(explicit["tags"]) == sorted(["source:pi", "workspace:pi", "bank:hpi-explicit", "kind:explicit",
                                               "origin:explicit"])
    assert explicit["document_metadata"]["explicit"] == "true"
