"""`import --apply --from-run RUN`: exactly what the dry run RUN planned is sent; a session that changed since is
refused by name, never planned again silently (fake server; one test on the real server)."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from hindsight_batch.api import ImportOptions, run_import
from tests.conftest import REAL_SAMPLES, SessionBuilder, invoke, read_manifest
from tests.fake_hindsight import FakeState, fake_hindsight
from tests.server import Server

BANK = "reviewed-bank"


def sessions(folder: Path, count: int = 3) -> list[Path]:
    """``count`` sessions of one project, one chunk per turn."""
    paths = []
    for index in range(count):
        b = SessionBuilder(cwd="/work/reviewed", session_id=f"0196f000-0000-7000-8000-0000000006{index:02d}")
        for turn in range(2):
            b.user(f"Session {index}: we decided on design point {turn} for the importer, implemented today.")
            b.assistant("noted")
        paths.append(b.write(folder / "--work-reviewed--" / f"s{index}.jsonl"))
    return paths


def config(tmp_path: Path, url: str, bank: str = BANK, **extra: Any) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"baseUrl": url, "import": {"turnsPerChunk": 1},
                                "banks": {"project": {"bankId": bank}}, **extra}))
    return path


class Setup:
    def __init__(self, runner: CliRunner, tmp_path: Path, url: str, bank: str = BANK) -> None:
        self.runner, self.tmp_path = runner, tmp_path
        self.folder = tmp_path / "sessions"
        self.paths = sessions(self.folder)
        self.config = config(tmp_path, url, bank)
        self.state = tmp_path / "state"

    def common(self) -> tuple[str, ...]:
        return ("--config", str(self.config), "--state", str(self.state))

    def dry_run(self, *args: str) -> tuple[str, list[dict[str, Any]]]:
        manifest = self.tmp_path / "plan.jsonl"
        result = invoke(self.runner, "import", str(self.folder), "--manifest", str(manifest), "--json", "-q",
                        "--live-retained", "include", *self.common(), *args)
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)["run_id"], read_manifest(manifest)

    def apply(self, run_id: str, *args: str) -> Any:
        return invoke(self.runner, "import", "--apply", "--from-run", run_id, "--json", "--live-retained", "include",
                      *self.common(), *args)


def planned(rows: list[dict[str, Any]], path: Path | None = None) -> set[str]:
    return {r["document_id"] for r in rows if r["document_id"] and (path is None or r["source_file"] == str(path))}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_apply_from_run_sends_exactly_the_planned_items(runner: CliRunner, tmp_path: Path, jobs: str) -> None:
    fake = FakeState()
    with fake_hindsight(fake) as url:
        setup = Setup(runner, tmp_path, url)
        run_id, rows = setup.dry_run()
        assert fake.retain_requests == 0 and planned(rows)
        result = setup.apply(run_id, "--jobs", jobs)
    assert result.exit_code == 0, result.stderr
    assert set(fake.held(BANK)) == planned(rows)  # exactly those documents, no other
    data = json.loads(result.stdout)["from_run"]
    assert data["refused_total"] == 0 and data["sessions_sent"] == 3
    assert data["items_as_reviewed"] == data["items_sent"] == len(planned(rows))


def test_each_item_sent_is_a_memory_item_of_the_servers_spec_and_the_one_its_row_hashed(runner: CliRunner,
                                                                                           tmp_path: Path) -> None:
    """What reaches the server is a ``MemoryItem`` of its OpenAPI spec, in replace mode, with the session's
    timestamp, and each is exactly the item its manifest row hashed (``item_sha256``, what ``--from-run`` and a
    re-run compare): planning makes it without validation, so nothing else checks its shape."""
    from hindsight_batch.plan.items import RetainItem
    from hindsight_batch.plan.planning import item_sha256

    spec = json.loads((REAL_SAMPLES.parents[1] / "design" / "hindsight-openapi-1.1.0.json").read_text())
    memory_item = set(spec["components"]["schemas"]["MemoryItem"]["properties"])
    fake = FakeState()
    with fake_hindsight(fake) as url:
        setup = Setup(runner, tmp_path, url)
        run_id, rows = setup.dry_run()
        result = setup.apply(run_id)
    assert result.exit_code == 0, result.stderr
    by_document = {r["document_id"]: r for r in rows if r["document_id"]}
    assert sorted(item["document_id"] for item in fake.received) == sorted(by_document)
    for item in fake.received:
        assert set(item) <= memory_item and item["update_mode"] == "replace", item
        assert item["timestamp"].startswith("20") and item["tags"] and item["metadata"]["session_id"]
        row = by_document[item["document_id"]]
        unset = {"timestamp": None, "observation_scopes": None}  # left out of the request when not set
        assert item_sha256(row["bank_id"], RetainItem(**{**unset, **item})) == row["item_sha256"]


def test_an_item_without_a_timestamp_or_scopes_leaves_both_keys_out() -> None:
    """A chunk with no valid timestamp, under settings without observation scopes: the request's item has neither
    key (the server's own defaults apply), and holds every other value as planned, copied."""
    from hindsight_batch.plan.items import RetainItem

    tags, metadata = ["project:x"], {"session_id": "s1"}
    item = RetainItem(content="c", context="ctx", timestamp=None, document_id="d", tags=tags,
                      observation_scopes=None, metadata=metadata)
    payload = item.payload()
    assert payload == {"content": "c", "context": "ctx", "document_id": "d", "update_mode": "replace",
                       "tags": ["project:x"], "metadata": {"session_id": "s1"}}
    assert payload["tags"] is not tags and payload["metadata"] is not metadata
    scoped = RetainItem(content="c", context="ctx", timestamp="2026-05-01T10:00:00Z", document_id="d", tags=tags,
                        observation_scopes=[["project:x"]], metadata=metadata).payload()
    assert scoped["timestamp"] == "2026-05-01T10:00:00Z" and scoped["observation_scopes"] == [["project:x"]]


def test_a_dry_run_that_reused_unchanged_sources_applies_and_a_second_apply_sends_nothing(
    runner: CliRunner, tmp_path: Path
) -> None:
    fake = FakeState()
    with fake_hindsight(fake) as url:
        setup = Setup(runner, tmp_path, url)
        _, rows = setup.dry_run()
        run_id, again = setup.dry_run()  # every source unchanged: reused, its rows kept under the first run
        assert planned(again) == planned(rows)
        first = setup.apply(run_id)
        assert first.exit_code == 0, first.stderr
        assert set(fake.held(BANK)) == planned(rows)
        requests = fake.retain_requests
        second = setup.apply(run_id)  # the same review once more: all of it is on the server already
        human = invoke(runner, "import", "--apply", "--from-run", run_id, "--live-retained", "include",
                       *setup.common())
    assert second.exit_code == 0, second.stderr
    assert fake.retain_requests == requests
    data = json.loads(second.stdout)["from_run"]
    assert data["items_sent"] == 0 and data["items_already_on_server"] == len(planned(rows))
    assert data["sessions_sent"] == 3 and data["refused_total"] == 0
    n = len(planned(rows))
    assert human.exit_code == 0 and (f"as reviewed in run {run_id}: 3 session(s), {n} item(s): 0 sent now, {n} "
                                     "already on the server; refused 0 session(s)") in human.stderr


def append_turn(path: Path, _state: Path) -> None:
    """Pi wrote another turn after the review."""
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"type": "message", "id": "late", "parentId": "e4",
                              "timestamp": "2026-05-01T11:00:00.000Z",
                              "message": {"role": "user", "content": "one more thing, decided later"}}) + "\n")


def touch(path: Path, _state: Path) -> None:
    """A new mtime, the same bytes: size, mtime and content hash are the check (issue 20), so it is refused."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def other_bytes(path: Path, _state: Path) -> None:
    """The same size and mtime, other bytes: only the SHA-256 tells."""
    stat = path.stat()
    path.write_text(path.read_text().replace("design point 0", "design point 9"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def remove(path: Path, _state: Path) -> None:
    path.unlink()


def other_plan(path: Path, state: Path) -> None:
    """The file is unchanged but planning it now gives other items than the review listed (as when the live check
    now finds more retained): simulated by altering the reviewed rows' item hash in the ledger."""
    with duckdb.connect(str(state / "ledger.duckdb")) as db:
        db.execute("UPDATE manifest SET item_sha256 = 'other' WHERE source_file = ? AND document_id IS NOT NULL",
                   [str(path)])


@pytest.mark.parametrize(("change", "why"), [
    (append_turn, "the file changed since the review (size and mtime)"),
    (touch, "the file changed since the review (mtime)"),
    (other_bytes, "the file's content changed since the review (SHA-256)"),
    (remove, "the file is gone since the review"),
    (other_plan, "the plan differs from the reviewed one"),
], ids=["appended", "touched", "same-size-other-bytes", "gone", "other-plan"])
def test_a_session_changed_since_the_review_is_refused_by_name_and_the_others_go(
    runner: CliRunner, tmp_path: Path, change: Callable[[Path, Path], None], why: str
) -> None:
    fake = FakeState()
    with fake_hindsight(fake) as url:
        setup = Setup(runner, tmp_path, url)
        run_id, rows = setup.dry_run()
        changed = setup.paths[1]
        change(changed, setup.state)
        result = setup.apply(run_id, *([str(setup.folder)] if change is remove else []))  # gone under a given folder
    assert result.exit_code == 1, result.stderr
    assert f"refused: {changed}: {why}" in result.stderr
    held = set(fake.held(BANK))
    assert held == planned(rows) - planned(rows, changed)  # nothing of it was sent, all of the others
    assert not held & planned(rows, changed)
    data = json.loads(result.stdout)["from_run"]
    assert data["refused_total"] == 1 and data["refused"][0]["file"] == str(changed) and data["sessions_sent"] == 2


def test_a_dry_run_planned_in_worker_processes_records_the_hashes_its_review_checks(
    runner: CliRunner, tmp_path: Path
) -> None:
    """With --jobs the workers hash the files they plan (not the parent): the review still holds each file's
    SHA-256 as read, so a file with other bytes of the same size and mtime is refused, the others go."""
    fake = FakeState()
    with fake_hindsight(fake) as url:
        setup = Setup(runner, tmp_path, url)
        read = {str(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in setup.paths}
        run_id, rows = setup.dry_run("--jobs", "2")
        with duckdb.connect(str(setup.state / "ledger.duckdb"), read_only=True) as db:
            recorded = dict(db.execute("SELECT path, sha256 FROM run_sources WHERE run_id = ?", [run_id]).fetchall())
            kept = dict(db.execute("SELECT path, sha256 FROM sources").fetchall())
        assert recorded == kept == read
        changed = setup.paths[1]
        other_bytes(changed, setup.state)
        result = setup.apply(run_id)
    assert result.exit_code == 1, result.stderr
    assert f"refused: {changed}: the file's content changed since the review (SHA-256)" in result.stderr
    assert set(fake.held(BANK)) == planned(rows) - planned(rows, changed)


def test_a_configuration_change_refuses_every_session(runner: CliRunner, tmp_path: Path) -> None:
    fake = FakeState()
    with fake_hindsight(fake) as url:
        setup = Setup(runner, tmp_path, url)
        run_id, _ = setup.dry_run()
        setup.config = config(tmp_path, url, constantTags=["reviewed-later"])  # other items than reviewed
        result = setup.apply(run_id)
    assert result.exit_code == 1
    assert fake.held(BANK) == {}
    assert result.stderr.count("the configuration changed since the review") == 3
    assert "run the dry run again" in result.stderr
    assert json.loads(result.stdout)["from_run"]["configuration_changed"] is True


def test_paths_not_in_the_run_are_ignored(runner: CliRunner, tmp_path: Path) -> None:
    fake = FakeState()
    with fake_hindsight(fake) as url:
        setup = Setup(runner, tmp_path, url)
        run_id, rows = setup.dry_run()
        extra = SessionBuilder(cwd="/work/reviewed", session_id="0196f000-0000-7000-8000-000000000699")
        extra.user("A session written after the review, never reviewed: we decided to send nothing of it.")
        extra.assistant("noted")
        new = extra.write(setup.folder / "--work-reviewed--" / "later.jsonl")
        result = setup.apply(run_id, str(setup.paths[0]), str(new))
    assert result.exit_code == 0, result.stderr
    assert set(fake.held(BANK)) == planned(rows, setup.paths[0])
    data = json.loads(result.stdout)["from_run"]
    assert data["ignored_paths"] == 1 and data["sessions_sent"] == 1


def test_usage_errors(runner: CliRunner, tmp_path: Path) -> None:
    fake = FakeState()
    with fake_hindsight(fake) as url:
        setup = Setup(runner, tmp_path, url)
        run_id, _ = setup.dry_run()
        without_apply = invoke(runner, "import", "--from-run", run_id, *setup.common())
        assert without_apply.exit_code == 2 and "--from-run goes with --apply" in without_apply.stderr
        for other in ("--delete-stale", "--catch-up"):  # each acts on more than the reviewed plan
            mixed = setup.apply(run_id, other)
            assert mixed.exit_code == 2 and f"does not go with {other}" in mixed.stderr
        assert fake.retain_requests == 0
        unknown = setup.apply("20990101T000000Z-deadbeef")
        assert unknown.exit_code == 2 and "20990101T000000Z-deadbeef: no such run" in unknown.stderr
        applied = setup.apply(run_id)
        assert applied.exit_code == 0
        applied_id = json.loads(applied.stdout)["run_id"]
        again = setup.apply(applied_id)
        assert again.exit_code == 2 and "not a dry-run import" in again.stderr
        with duckdb.connect(str(setup.state / "ledger.duckdb")) as db:
            db.execute("DELETE FROM run_sources")  # as a dry run made before run_sources existed
        old = setup.apply(run_id)
        assert old.exit_code == 2 and "recorded no sources for that dry run" in old.stderr
    assert fake.retain_requests == 1  # only the one accepted apply sent anything


def test_the_library_applies_a_reviewed_run(tmp_path: Path, runner: CliRunner) -> None:
    fake = FakeState()
    with fake_hindsight(fake) as url:
        setup = Setup(runner, tmp_path, url)
        run_id, rows = setup.dry_run()
        result = run_import(ImportOptions(apply=True, from_run=run_id, config_file=setup.config,
                                          state_dir=setup.state, live_retained="include"))
    assert result.ok and result.refused == 0
    assert set(fake.held(BANK)) == planned(rows)


@pytest.mark.timeout(900)
def test_apply_from_run_on_the_real_server(runner: CliRunner, tmp_path: Path, hindsight_server: Server) -> None:
    bank = f"t-{uuid.uuid4().hex[:10]}"
    setup = Setup(runner, tmp_path, hindsight_server.url, bank)
    run_id, rows = setup.dry_run()
    appended = setup.paths[1]
    with appended.open("a", encoding="utf-8") as out:
        out.write("\n")
    result = setup.apply(run_id, "--wait")
    assert result.exit_code == 1, result.stderr
    assert f"refused: {appended}:" in result.stderr
    with hindsight_server.client() as client:
        held = {doc["id"] for doc in client.documents(bank)}
    assert held == planned(rows) - planned(rows, appended)


def test_the_review_page_and_report_of_a_dry_run_show_every_session_from_run_sends(
    runner: CliRunner, tmp_path: Path
) -> None:
    """A second dry run reads only the new session and reuses the others (their rows stay under the first run):
    its review page and its report still hold all of them, since --from-run sends all of them."""
    fake = FakeState()
    with fake_hindsight(fake) as url:
        setup = Setup(runner, tmp_path, url)
        setup.dry_run()
        late = SessionBuilder(cwd="/work/reviewed", session_id="0196f000-0000-7000-8000-000000000699")
        late.user("Session late: we decided to keep the review page, implemented today.")
        late.write(setup.folder / "--work-reviewed--" / "late.jsonl")
        run_id, rows = setup.dry_run()
        assert json.loads(invoke(runner, "report", "--run", run_id, "--json", *setup.common()).stdout)["chunks"] \
            == len({(r["source_file"], r["segment"], r["chunk_index"]) for r in rows}) == 7
        page = tmp_path / "review.html"
        shown = invoke(runner, "review", "-o", str(page), *setup.common())  # the latest dry run by default
        assert shown.exit_code == 0, shown.stderr
        sent = setup.apply(run_id)
    assert sent.exit_code == 0, sent.stderr
    html = page.read_text(encoding="utf-8")
    assert f"Review of run {run_id}" in html and '<span id="total-sessions">4</span>' in html
    assert '<span id="total-chunks">7</span>' in html
    assert json.loads(sent.stdout)["from_run"]["sessions_sent"] == 4 and set(fake.held(BANK)) == planned(rows)
