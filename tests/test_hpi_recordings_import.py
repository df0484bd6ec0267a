"""Who sends hindsight-pi's queued turns (tests/fixtures/extensions/hpi/queued: its last flush failed, the records
wait in ~/.hindsight/pi-queues): ``flush``, once. The import leaves them out (tests/test_recorded_extensions.py
checks that per scenario); here the whole round trip runs on the real server: import, flush, import again, and the
server holds every turn exactly once."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import invoke, read_manifest
from tests.hpi_recordings import Rerooted, document_texts, load_server, reroot, turns
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


@pytest.mark.timeout(900)
def test_queued_turns_are_sent_once_by_flush_and_not_by_the_import(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, hindsight_server: Server
) -> None:
    """The queue's owner is ``flush``: the import leaves queued turns out; flush appends them to the session's
    document; the next import finds them there and plans nothing; the server holds each turn once."""
    where = on_server("queued", runner, tmp_path, isolated_home, hindsight_server)
    config: tuple[str, ...] = ()  # hindsight-pi is found by its queue folder (no config names it)
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

