"""The batch paths over what the real extensions wrote (tests/fixtures/extensions/, recorded through pi 0.73.1 and
the real server: see each PROVENANCE.md). Each scenario is re-rooted under a temporary HOME and /PROJECT; where the
recording holds the server's documents, they are put back on the real test server under their own ids and tags,
and the import is checked turn by turn: nothing the server holds is sent again (doubled), nothing the session holds
is lost (missing), nothing switched off is planned."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hindsight_batch import prune
from hindsight_batch.extension.records import backfill_ids, live_text_records
from hindsight_batch.extension.switches import path_hashes
from tests.conftest import invoke, read_manifest
from tests.extension_shapes import luxus_cursor, luxus_meta, needs_node
from tests.server import Server
from tests.test_live_retained import wait_done

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "extensions"
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing listens


class Replayed:
    def __init__(self, scenario: Path, home: Path, project: Path, base_url: str) -> None:
        self.scenario, self.home, self.project, self.base_url = scenario, home, project, base_url
        self.sessions = home / ".pi" / "agent" / "sessions" / "--PROJECT--"

    def fix(self, text: str) -> str:
        """The recording's placeholders (PROVENANCE.md, "Normalisation") as this test's folders and server."""
        return (text.replace("/PROJECT", str(self.project)).replace("/HOME", str(self.home))
                .replace("http://HINDSIGHT", self.base_url))

    def copy(self, source: Path, target: Path) -> None:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                out = target / path.relative_to(source)
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(self.fix(path.read_text()))

    @property
    def files(self) -> list[Path]:
        return sorted(self.sessions.glob("*.jsonl"))

    def server_documents(self) -> list[tuple[str, dict[str, Any]]]:
        data = json.loads(self.fix((self.scenario / "server.json").read_text()))
        return [(bank, doc) for bank, held in data.items() for doc in held.get("documents", [])]

    def load_server(self, server: Server) -> None:
        """The recorded documents, back on the server under their ids, tags, context and text."""
        with server.client() as client:
            for bank, doc in self.server_documents():
                item = {"content": doc["original_text"], "document_id": doc["id"], "tags": doc["tags"],
                        "context": (doc.get("retain_params") or {}).get("context") or "", "update_mode": "replace"}
                wait_done(client, bank, client.retain(bank, [item], str(uuid.uuid4())).operation_id)


def replay(tmp_path: Path, home: Path, scenario: str, ext: str = "hpi", base_url: str = UNREACHABLE) -> Replayed:
    source = FIXTURES / ext / scenario
    project = tmp_path / "PROJECT"
    project.mkdir(parents=True)
    replayed = Replayed(source, home, project, base_url)
    replayed.copy(source / "sessions" / "--PROJECT--", replayed.sessions)
    if (source / "hindsight-home").is_dir():
        replayed.copy(source / "hindsight-home", home / ".hindsight")
    if (source / "project").is_dir():
        replayed.copy(source / "project", project)
    return replayed


def run(runner: CliRunner, tmp_path: Path, replayed: Replayed, *args: str) -> tuple[dict[str, Any], list[dict]]:  # type: ignore[type-arg]
    manifest = tmp_path / f"m-{uuid.uuid4().hex[:6]}.jsonl"
    result = invoke(runner, "import", str(replayed.sessions), "--state", str(tmp_path / f"st-{uuid.uuid4().hex}"),
                    "--manifest", str(manifest), "--json", "--include-content", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.output), read_manifest(manifest)


def texts_of(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content or [] if isinstance(b, dict) and b.get("type") == "text" and b.get("text")]


def session_texts(replayed: Replayed) -> dict[str, str]:
    """Each user or assistant text of the sessions, by entry id."""
    found = {}
    for path in replayed.files:
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            message = entry.get("message") or {}
            if entry.get("type") == "message" and message.get("role") in ("user", "assistant"):
                for text in texts_of(message):
                    found[entry["id"]] = text
    return found


def server_texts(replayed: Replayed) -> set[str]:
    """The texts the recorded server documents hold: live retains' prepared messages and backfills' records."""
    held: set[str] = set()
    for _, doc in replayed.server_documents():
        text = doc.get("original_text") or ""
        for line in text.split("\n"):
            value = json.loads(line) if line.strip() else None
            records = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
            for record in records:
                held.update(texts_of(record.get("message") or {}))
    return held


def tally(replayed: Replayed, rows: list[dict[str, Any]], switched_off: set[str] = frozenset()  # type: ignore[assignment]
          ) -> dict[str, list[str]]:
    """Per text of the session: planned again though the server holds it (doubled), in neither (missing)."""
    planned = "".join(r.get("content") or "" for r in rows)
    held = server_texts(replayed)
    texts = session_texts(replayed)
    return {
        "planned": [t for t in texts.values() if t in planned],
        "doubled": [t for t in texts.values() if t in planned and t in held],
        "missing": [t for i, t in texts.items() if t not in planned and t not in held and i not in switched_off],
    }


# --- against the real server: what it holds is never sent again, what it lost is ---------------------------------


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("scenario", "bank", "planned"), [
    ("complete", "hpi-live", 0),  # three turns, flushed at exit: all held
    # A second flush (pi --continue) replaced the document: the first run's two turns (4 texts) are lost there.
    ("resumed", "hpi-resumed", 4),
    ("tags", "hpi-tags", 0),
    ("backfill-session", "hpi-backfill-session", 0),  # /hindsight:parse-and-upsert-session holds every entry
    ("backfill-historical", "hpi-backfill-historical", 0),  # /hindsight:upsert-historical-sessions, by file name
])
def test_recorded_sessions_against_what_the_server_holds(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server,
    scenario: str, bank: str, planned: int,
) -> None:
    replayed = replay(tmp_path, isolated_home, scenario, base_url=hindsight_server.url)
    monkeypatch.setenv("HINDSIGHT_BANK_ID", bank)
    replayed.load_server(hindsight_server)
    summary, rows = run(runner, tmp_path, replayed)
    counts = tally(replayed, rows)
    assert counts["doubled"] == [] and counts["missing"] == []
    assert len(counts["planned"]) == planned, counts
    assert summary["live_retained"].get("after") == len(replayed.files)
    if scenario == "tags":  # /hindsight:tag alpha, beta (hindsight-meta data.tags) on the items, as on the server
        assert all({"alpha", "beta"} <= set(r["tags"]) for r in rows if r["document_id"])


@pytest.mark.timeout(600)
def test_a_session_switched_off_halfway(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    """turn, /hindsight:toggle-retain, turn: the server holds the first turn; the second was never retained."""
    replayed = replay(tmp_path, isolated_home, "off-session", base_url=hindsight_server.url)
    monkeypatch.setenv("HINDSIGHT_BANK_ID", "hpi-off-session")
    replayed.load_server(hindsight_server)
    off = {i for i, t in session_texts(replayed).items() if "Second turn" in t}
    summary, rows = run(runner, tmp_path, replayed, "--catch-up")
    assert tally(replayed, rows, off) == {"planned": [], "doubled": [], "missing": []}
    assert summary["messages_dropped"]["switched-off"] == 2 and summary["switched_off"][0]["switch"] == "hpi-session"
    summary, rows = run(runner, tmp_path, replayed)  # an import takes it (and says so)
    counts = tally(replayed, rows)
    assert len(counts["planned"]) == 2 and counts["doubled"] == [] and summary["switched_off_total"] == 1


# --- local state only ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("scenario", "reason"), [("off-project", "host.pi.enabled is false"),
                                                  ("off-project-save-messages", "host.pi.saveMessages is false")])
def test_a_project_the_user_switched_off(runner: CliRunner, tmp_path: Path, isolated_home: Path, scenario: str,
                                         reason: str) -> None:
    replayed = replay(tmp_path, isolated_home, scenario)
    summary, rows = run(runner, tmp_path, replayed, "--catch-up", "--live-retained", "include")
    assert [r["status"] for r in rows] == ["switched-off"] and reason in summary["switched_off"][0]["reason"]
    assert not any(text in json.dumps(rows) for text in session_texts(replayed).values())


@pytest.mark.parametrize("scenario", ["queued", "live-k2"])
def test_messages_still_queued_by_the_extension_are_left_to_flush(runner: CliRunner, tmp_path: Path,
                                                                  isolated_home: Path, scenario: str) -> None:
    replayed = replay(tmp_path, isolated_home, scenario)
    queue = next((isolated_home / ".hindsight" / "pi-queues").glob("*.auto.jsonl"))
    queued = [json.loads(json.loads(line)["content"]) for line in queue.read_text().splitlines()]
    summary, rows = run(runner, tmp_path, replayed)
    planned = "".join(r.get("content") or "" for r in rows)
    assert summary["queued_by_extension"][0]["left_out"] == len(queued) == 4
    assert summary["queued_by_extension"][0]["unplaced"] == 0
    assert not any(text in planned for record in queued for text in texts_of(record["message"]))


def test_the_parent_tag_is_the_one_the_extension_wrote(runner: CliRunner, tmp_path: Path,
                                                       isolated_home: Path) -> None:
    replayed = replay(tmp_path, isolated_home, "new-session-with-parent")
    _, rows = run(runner, tmp_path, replayed, "--live-retained", "include")
    documents = [doc for _, doc in replayed.server_documents()]
    recorded = {doc["id"]: {t for t in doc["tags"] if t.startswith("parent:")} for doc in documents}
    ours = {r["session_id"]: {t for t in r["tags"] if t.startswith("parent:")} for r in rows}
    assert ours == recorded and len(recorded) == 2


def test_the_recorded_backfill_and_live_texts_are_read_by_content(tmp_path: Path) -> None:
    for scenario in ("backfill-session", "backfill-historical"):
        replayed = replay(tmp_path / scenario, tmp_path / scenario / "home", scenario)
        entries = {json.loads(line)["id"] for path in replayed.files for line in path.read_text().splitlines()
                   if json.loads(line).get("type") == "message"}
        listed = set().union(*(backfill_ids(doc["original_text"]) for _, doc in replayed.server_documents()))
        assert listed == entries
    replayed = replay(tmp_path / "complete", tmp_path / "complete" / "home", "complete")
    records = live_text_records(replayed.server_documents()[0][1]["original_text"])
    assert records is not None and len(records) == 6


@pytest.mark.parametrize(("scenario", "gone", "kept"), [
    ("recall-persisted", {"hindsight-recall"}, set()),
    ("recall-status-0.3.1", {"hindsight-recall-status"}, {"hindsight-retain-status"}),
])
def test_prune_removes_the_recorded_recall_and_nothing_else(tmp_path: Path, isolated_home: Path, scenario: str,
                                                            gone: set[str], kept: set[str]) -> None:
    replayed = replay(tmp_path, isolated_home, scenario)
    before = {p: p.read_text().splitlines() for p in replayed.files}
    for path in replayed.files:
        result = prune.prune_file(path, confirm=True, force=True)
        assert result.status in ("pruned", "clean"), result.reason
    for path, lines in before.items():
        after = path.read_text().splitlines()
        types = {json.loads(line).get("customType") for line in after}
        assert not gone & types and kept <= types | {json.loads(line).get("customType") for line in lines} - gone
        # Everything else stays (a child of a removed entry is re-pointed to its grandparent: parentId only).
        def without_parent(line: str) -> dict[str, Any]:
            return {k: v for k, v in json.loads(line).items() if k != "parentId"}

        assert ([without_parent(line) for line in lines if json.loads(line).get("customType") not in gone]
                == [without_parent(line) for line in after])


# --- what pi hands pi-hindsight (the probe) ------------------------------------------------------------------------


@needs_node
def test_pi_hindsights_keys_and_cursor_as_pi_hands_them(runner: CliRunner, tmp_path: Path,
                                                        isolated_home: Path) -> None:
    """~/.pi is a link: pi's getSessionFile() is joined from $HOME, not resolved; agent_end's messages have no ids
    and are the last run's only. A meta keyed by pi's spelling is found; a cursor built over the first run's
    messages leaves out exactly the first run."""
    source = FIXTURES / "pi-probe" / "symlinked-home"
    target = tmp_path / "PI-TARGET"
    (target / "agent" / "sessions").mkdir(parents=True)
    (isolated_home / ".pi").symlink_to(target)
    replayed = replay(tmp_path, isolated_home, "symlinked-home", ext="pi-probe")
    assert replayed.files and replayed.files[0].resolve().is_relative_to(target)
    probe = [json.loads(replayed.fix(line).replace("/PI-TARGET", str(target)))
             for line in (source / "probe.jsonl").read_text().splitlines()]
    spelled = probe[0]["sessionFile"]
    assert Path(spelled).resolve().as_posix() != spelled  # pi's spelling is not the resolved path
    assert path_hashes(replayed.files[0].resolve())[0] == hashlib.sha256(spelled.encode()).hexdigest()[:16]
    # The cursor pi-hindsight writes at the first agent_end: over that run's messages (found by their timestamps).
    first_run = {m["timestamp"] for m in next(p for p in probe if p["event"] == "agent_end")["messages"]}
    messages = [json.loads(line)["message"] for line in replayed.files[0].read_text().splitlines()
                if json.loads(line).get("type") == "message"]
    run_messages = [m for m in messages if m["timestamp"] in first_run]
    assert len(run_messages) == 4 and all("id" not in m for m in run_messages)
    digest = hashlib.sha256(spelled.encode()).hexdigest()[:16]
    state = replayed.project / ".pi" / "hindsight"
    state.mkdir(parents=True)
    cursor = {"version": 3, "sessions": {digest: luxus_cursor(run_messages)}}
    (state / "retain-cursors.json").write_text(json.dumps(cursor))
    summary, rows = run(runner, tmp_path, replayed, "--catch-up", "--live-retained", "include")
    planned = "".join(r.get("content") or "" for r in rows)
    assert "Second probe turn" in planned and "First probe turn" not in planned and summary["cursor_fallbacks"] == []
    (state / "session-meta").mkdir()
    (state / "session-meta" / f"{digest}.json").write_text(json.dumps(luxus_meta(mode="ignored")))
    summary, rows = run(runner, tmp_path, replayed, "--catch-up", "--live-retained", "include")
    assert [r["status"] for r in rows] == ["switched-off"]
    shutil.rmtree(state)
    assert os.path.islink(isolated_home / ".pi")
