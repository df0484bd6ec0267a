"""An import over what hindsight-pi really wrote (tests/fixtures/extensions/hpi, made by its own code in pi 0.73.1
against the real server): the recordings are put back under a test's folders, the server is given the documents
it held, and the import must send every turn exactly once between it and the extension: nothing the server or the
extension's queue holds (doubled), nothing lost (missing)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import invoke, read_manifest
from tests.hpi_recordings import Rerooted, document_texts, held_texts, load_server, reroot, tally, turns
from tests.server import Server


def imported(runner: CliRunner, where: Rerooted, tmp_path: Path, *args: str, code: int = 0
             ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    manifest = tmp_path / f"m-{uuid.uuid4().hex[:6]}.jsonl"
    result = invoke(runner, "import", str(where.sessions), "--manifest", str(manifest), "--include-content",
                    "--json", "--state", str(tmp_path / "state-hb"), *args)
    assert result.exit_code == code, result.stderr
    return json.loads(result.output), read_manifest(manifest) if manifest.exists() else []


def on_server(scenario: str, runner: CliRunner, tmp_path: Path, home: Path, server: Server) -> Rerooted:
    where = reroot(scenario, tmp_path / "root", home, server.url, unique=uuid.uuid4().hex[:8])
    with server.client() as client:
        load_server(where, client)
    return where


def named(tmp_path: Path) -> tuple[str, str]:
    """This tool's config naming the extension (the recorded ~/.hindsight/config.json holds only ``baseUrl``)."""
    config = tmp_path / "hb.json"
    config.write_text('{"extension": "hindsight-pi"}')
    return "--config", str(config)


# scenario → (turns, planned) of a dry run: what the extension's documents and queue leave to the import.
EXPECTED = {
    "complete": (6, 0),  # the live document lists all six messages
    "resumed": (6, 4),  # the second flush replaced the first: turns 1-2 are gone from the server and come back
    "backfill-session": (4, 0),  # /hindsight:parse-and-upsert-session lists every entry by id
    "backfill-historical": (8, 0),  # /hindsight:upsert-historical-sessions: one document per file
    "queued": (4, 0),  # its flush failed: the queue holds them, flush sends them
    "live-k2": (4, 0),  # pi still runs: the queue holds them
}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_every_turn_once_between_the_extension_and_the_import(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, hindsight_server: Server, scenario: str
) -> None:
    where = on_server(scenario, runner, tmp_path, isolated_home, hindsight_server)
    summary, rows = imported(runner, where, tmp_path, *named(tmp_path))
    counted = tally(where.files, rows, held_texts(scenario, isolated_home))
    total, planned = EXPECTED[scenario]
    assert counted.as_dict() == {"turns": total, "planned": planned, "doubled": 0, "missing": 0}
    assert set(summary["project_banks"]) == {where.bank}
    if scenario == "resumed":
        note = rows[0]["live_retained"]
        assert note["decision"] == "after" and "by their text" in note["note"] and "live_until" not in note
        content = "".join(r["content"] or "" for r in rows)
        assert "First run, first turn." in content and "Second run (resumed)" not in content
    if scenario in ("queued", "live-k2"):
        (queued,) = summary["queued_by_extension"]
        assert queued["left_out"] == 4 and queued["unplaced"] == 0


@pytest.mark.timeout(900)
def test_queued_turns_are_sent_once_by_flush_and_not_by_the_import(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, hindsight_server: Server
) -> None:
    """The queue's owner is ``flush``: the import leaves queued turns out; flush appends them to the session's
    document; the next import finds them there and plans nothing; the server holds each turn once."""
    where = on_server("queued", runner, tmp_path, isolated_home, hindsight_server)
    config = named(tmp_path)
    summary, _ = imported(runner, where, tmp_path, *config, "--apply", "--wait")
    assert summary["queued_by_extension"][0]["left_out"] == 4
    result = invoke(runner, "flush", str(isolated_home / ".hindsight" / "pi-queues"), "--json")
    assert result.exit_code == 0, result.stderr
    (report,) = json.loads(result.output)["queues"]
    assert report["sent"] == 4 and report["left"] == 0
    with hindsight_server.client() as client:  # the server stores what flush sent in the background
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(document_texts(
                str((client.document(where.bank, where.files[0].name.split("_")[1][:-6]) or {}).get("original_text")
                    or ""))) < 4:
            time.sleep(0.5)
    summary, rows = imported(runner, where, tmp_path, *config, "--apply", "--wait")
    assert summary["queued_by_extension"] == [] and summary["live_retained"] == {"after": 1}
    assert not [r for r in rows if r.get("document_id")]
    with hindsight_server.client() as client:
        docs = [client.document(where.bank, str(d["id"])) for d in client.documents(where.bank)]
    held = [t for d in docs for t in document_texts(str((d or {}).get("original_text") or ""))]
    for _, _, text in [t for path in where.files for t in turns(path)]:
        assert held.count(text) == 1, text


def test_a_live_record_is_placed_after_the_extensions_credential_masking(tmp_path: Path, isolated_home: Path) -> None:
    """hindsight-pi masks credentials before it queues a message (upload.ts sanitizeCredentials): the record's
    text differs from the entry's, and still names it; a record that matches no entry is counted, not guessed."""
    from hindsight_batch.extension_records import held_by_text
    from tests.hpi_recordings import documents

    where = reroot("complete", tmp_path, isolated_home)
    (path,) = where.files
    secret = "token=abcd1234efgh5678"
    path.write_text(path.read_text().replace("Second question: what does the README say?",
                                             f"Second question: {secret} what does the README say?"))
    text = documents("complete")[0]["original_text"].replace(
        "Second question: what does the README say?", "Second question: <REDACTED> what does the README say?")
    held = held_by_text(text, path)
    assert (len(held.ids), held.records, held.unplaced) == (6, 6, 0)
    held = held_by_text(text.replace("Third turn", "A turn pi never wrote", 1), path)
    assert (len(held.ids), held.records, held.unplaced) == (5, 6, 1)
