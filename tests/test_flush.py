"""`flush`: draining the extension's retain queues (S1, S3, S5, the lock protocol)."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from hindsight_batch.config.model import Upload
from hindsight_batch.errors import BusyError
from hindsight_batch.queue.flush import MAX_WAIT_SECONDS, QueueFlusher
from hindsight_batch.queue.store import STALE_SECONDS, QueueLock, read_queue
from hindsight_batch.redaction.redactor import Redactor
from hindsight_batch.sinks.hindsight import HindsightClient
from tests.conftest import invoke
from tests.server import Server

pytestmark = pytest.mark.timeout(600)
SECRET = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"


def job(bank: str, doc: str, content: str, mode: str = "append", **extra: Any) -> dict[str, Any]:
    """A job in the project-queue layout."""
    return {"id": str(uuid.uuid4()), "bankId": bank, "createdAt": "2026-05-01T10:00:00.000Z", "documentId": doc,
            "updateMode": mode, "item": {"content": content, "context": "pi session", "tags": ["harness:pi"],
                                         "metadata": {"source": "pi"}, **extra}, "retries": 0}


def write_queue(path: Path, records: list[dict[str, Any]], extra_lines: tuple[str, ...] = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in records] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n")
    return path


def project_queue(tmp_path: Path) -> Path:
    return tmp_path / "proj" / ".pi" / "hindsight" / "retain-queue.jsonl"


def document_text(client: HindsightClient, bank: str, doc: str, expected: str, timeout: float = 60) -> str | None:
    """The document's text once it equals ``expected`` (async operations settle), or its last text."""
    deadline = time.monotonic() + timeout
    text = None
    while time.monotonic() < deadline:
        found = client.document(bank, doc)  # None until the operation stored it
        if found is not None:
            text = str(found["original_text"])
            if text == expected:
                break
        time.sleep(0.2)
    return text


def flush(runner: CliRunner, monkeypatch: pytest.MonkeyPatch, server: Server, *args: str) -> Any:
    monkeypatch.setenv("HINDSIGHT_BASE_URL", server.url)
    return invoke(runner, "flush", *args)


def test_flush_sends_in_order_and_dead_letters_recall_and_secrets(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    bank = f"q-{uuid.uuid4().hex[:8]}"
    queue = write_queue(project_queue(tmp_path), [
        job(bank, "pi-session:abc", "first turn"),
        job(bank, "pi-session:abc", "second turn"),
        job(bank, "pi-session:abc", "<hindsight_memories>RECALLED</hindsight_memories> echo"),
        job(bank, "pi-session:abc", f"my token {SECRET}"),
        job(bank, "pi-session:def", "other document", mode="replace"),
        job(bank, "pi-session:abc", "third turn"),
    ], extra_lines=('{"not a job": true}', "{broken"))
    result = flush(runner, monkeypatch, hindsight_server, str(tmp_path / "proj"), "--json")
    assert result.exit_code == 1, result.stderr  # two records were dead-lettered
    report = json.loads(result.output)["queues"][0]
    assert (report["sent"], report["dead_lettered"], report["quarantined"], report["left"]) == (4, 2, 2, 0)
    assert read_queue(queue).jobs == []
    dead = (queue.parent / "retain-queue.dead.jsonl").read_text()
    assert "S1" in dead and "S3" in dead and SECRET not in dead
    malformed = [json.loads(line) for line in (queue.parent / "retain-queue.malformed.jsonl").read_text().splitlines()]
    assert [m["line"] for m in malformed] == ['{"not a job": true}', "{broken"]
    with hindsight_server.client() as client:
        expected = "first turn\nsecond turn\nthird turn"
        assert document_text(client, bank, "pi-session:abc", expected) == expected
        assert document_text(client, bank, "pi-session:def", "other document") == "other document"


def test_flush_reads_the_pi_queues_layout(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    bank = f"q-{uuid.uuid4().hex[:8]}"
    record = {"sessionId": "s1", "bankId": bank, "content": '{"role":"user","text":"hello"}', "context": "pi: demo",
              "tags": ["harness:pi", "session:s1"], "metadata": {"store_method": "auto"},
              "timestamp": "2026-05-01T10:00:00.000Z", "document_id": "s1", "update_mode": "append",
              "observation_scopes": [["session:s1"]]}
    queue = write_queue(tmp_path / "pi-queues" / "s1.auto.jsonl", [record])
    result = flush(runner, monkeypatch, hindsight_server, str(tmp_path / "pi-queues"))
    assert result.exit_code == 0, result.stderr
    assert queue.read_text() == ""
    with hindsight_server.client() as client:
        assert document_text(client, bank, "s1", record["content"]) == record["content"]


def test_a_lock_held_by_a_live_owner_gives_exit_75_and_a_stale_one_is_taken_over(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    bank = f"q-{uuid.uuid4().hex[:8]}"
    queue = write_queue(project_queue(tmp_path), [job(bank, "d1", "content one", mode="replace")])
    lock = queue.with_name(queue.name + ".lock")
    lock.mkdir()
    (lock / "owner").write_text(json.dumps({"pid": os.getpid(), "acquiredAt": "now", "token": "pi"}))
    busy = flush(runner, monkeypatch, hindsight_server, str(tmp_path / "proj"))
    assert busy.exit_code == 75 and "held by process" in busy.stderr
    assert len(read_queue(queue).jobs) == 1 and lock.is_dir()
    (lock / "owner").write_text(json.dumps({"pid": 2**22 + 12345, "acquiredAt": "then", "token": "gone"}))
    old = time.time() - 120
    os.utime(lock / "owner", (old, old))
    taken = flush(runner, monkeypatch, hindsight_server, str(tmp_path / "proj"))
    assert taken.exit_code == 0, taken.stderr
    assert read_queue(queue).jobs == [] and not lock.exists()


def _flush_process(server: Server, folder: Path, home: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HINDSIGHT_BASE_URL": server.url, "HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "hindsight_batch", "flush", str(folder), "-q"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_two_concurrent_flushes_never_send_a_job_twice(tmp_path: Path, hindsight_server: Server) -> None:
    bank = f"q-{uuid.uuid4().hex[:8]}"
    pieces = [f"turn {i}" for i in range(30)]
    queue = write_queue(project_queue(tmp_path), [job(bank, "pi-session:same", p) for p in pieces])
    first = _flush_process(hindsight_server, tmp_path / "proj", tmp_path)
    second = _flush_process(hindsight_server, tmp_path / "proj", tmp_path)
    codes = sorted([first.wait(300), second.wait(300)])
    assert codes[0] == 0 and codes[1] in (0, 75)
    leftover = _flush_process(hindsight_server, tmp_path / "proj", tmp_path)
    assert leftover.wait(300) == 0
    assert read_queue(queue).jobs == []
    with hindsight_server.client() as client:
        text = document_text(client, bank, "pi-session:same", "\n".join(pieces))
    assert text == "\n".join(pieces)  # every turn once, in order


def test_a_flush_killed_midway_loses_nothing(tmp_path: Path, hindsight_server: Server) -> None:
    bank = f"q-{uuid.uuid4().hex[:8]}"
    records = [job(bank, f"doc-{i:02d}", f"content {i}", mode="replace") for i in range(40)]
    config = tmp_path / "home" / ".hindsight" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"upload": {"batchItems": 1}}))
    queue = write_queue(project_queue(tmp_path), records)
    for delay in (0.4, 0.8, 1.2):
        process = _flush_process(hindsight_server, tmp_path / "proj", tmp_path / "home")
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        left = read_queue(queue)
        assert left.malformed == []  # the queue file is always whole
    lock = QueueLock(queue).path
    if lock.is_dir() and not (lock / "owner").exists():
        # Killed between creating the lock and writing its owner: the extension's protocol holds such a lock live
        # for STALE_SECONDS (it may be a pi process creating it right now), so a flush now would be busy (75).
        # Age it as the next cron run would find it.
        old = time.time() - STALE_SECONDS - 1
        os.utime(lock, (old, old))
    assert _flush_process(hindsight_server, tmp_path / "proj", tmp_path / "home").wait(300) == 0
    assert read_queue(queue).jobs == []
    with hindsight_server.client() as client:
        for i in range(40):
            assert document_text(client, bank, f"doc-{i:02d}", f"content {i}") == f"content {i}"


def test_a_job_that_keeps_failing_is_dead_lettered_with_its_error(tmp_path: Path) -> None:
    queue = write_queue(project_queue(tmp_path), [job("b", "d1", "one"), job("b", "d2", "two", mode="replace")])

    def handler(request: httpx.Request) -> httpx.Response:
        items = json.loads(request.content)["items"]
        if items[0]["document_id"] == "d1":
            return httpx.Response(422, json={"detail": "bad item"})
        return httpx.Response(200, json={"operation_id": json.loads(request.content)["operation_id"]})

    client = HindsightClient("http://127.0.0.1:9", transport=httpx.MockTransport(handler), max_attempts=1)
    flusher = QueueFlusher(client, Redactor(b"k"), Upload.model_validate({"batchItems": 1}))
    for attempt in range(1, 6):
        report = flusher.flush(queue)
        remaining = read_queue(queue).jobs
        if attempt < 5:
            assert [(j.item["document_id"], j.retries) for j in remaining] == [("d1", attempt)]
            assert "bad item" in remaining[0].raw["lastError"]
    assert report.dead_lettered == 1 and read_queue(queue).jobs == []
    dead = json.loads((queue.parent / "retain-queue.dead.jsonl").read_text())
    assert "retry limit reached" in dead["lastError"] and "bad item" in dead["lastError"]


def test_dry_run_writes_nothing_and_needs_no_server(runner: CliRunner, tmp_path: Path) -> None:
    queue = write_queue(project_queue(tmp_path), [job("b", "d", "hello"), job("b", "d", f"key {SECRET}")],
                        extra_lines=("{broken",))
    before = queue.read_bytes()
    result = invoke(runner, "flush", str(tmp_path / "proj"), "--dry-run", "--json")
    report = json.loads(result.output)["queues"][0]
    assert (report["would_send"], report["dead_lettered"], report["quarantined"]) == (1, 1, 1)
    assert queue.read_bytes() == before and sorted(p.name for p in queue.parent.iterdir()) == ["retain-queue.jsonl"]


def test_queue_lock_protocol_round_trip(tmp_path: Path) -> None:
    queue = tmp_path / "q.jsonl"
    queue.write_text("")
    with QueueLock(queue) as lock:
        owner = json.loads((lock.path / "owner").read_text())
        assert owner["pid"] == os.getpid() and owner["token"] == lock.token
        with pytest.raises(BusyError, match="held by process"):
            QueueLock(queue).acquire(wait=0)
    assert not lock.path.exists()


def test_a_lock_being_created_is_not_taken_for_stale(tmp_path: Path) -> None:
    """Between another process's mkdir and its owner file, the lock is live, not stale (a CI race, once)."""
    queue = tmp_path / "q.jsonl"
    queue.write_text("")
    lock = QueueLock(queue)
    lock.path.mkdir()  # someone else's lock, no owner file yet
    with pytest.raises(BusyError):
        QueueLock(queue).acquire(wait=0.1)
    assert lock.path.is_dir()
    old = time.time() - 120
    os.utime(lock.path, (old, old))  # an owner that died before writing its file: stale after 30 s
    with QueueLock(queue) as taken:
        assert taken.held and json.loads((lock.path / "owner").read_text())["token"] == taken.token
    assert not any(p.name.startswith("q.jsonl.lock") for p in tmp_path.iterdir())


def _count_under_lock(queue: Path, rounds: int) -> None:
    counter = queue.with_name("counter")
    for _ in range(rounds):
        with QueueLock(queue):
            value = int(counter.read_text())
            time.sleep(0.001)  # widen the window a lost update would need
            counter.write_text(str(value + 1))


def test_the_lock_excludes_other_processes(tmp_path: Path) -> None:
    queue = tmp_path / "q.jsonl"
    queue.write_text("")
    (tmp_path / "counter").write_text("0")
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_count_under_lock, args=(queue, 40)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0, 0]
    assert (tmp_path / "counter").read_text() == "160"  # no two holders ever overlapped


@pytest.mark.parametrize("marker", ["hindsight_memories", "hindsight-memory", "hindsight-mental-models",
                                    "mental_models"])
def test_memory_spliced_into_the_middle_of_queued_text_is_dead_lettered_never_sent(
    tmp_path: Path, marker: str
) -> None:
    block = f"<{marker}>RECALLED-MID {marker}</{marker}>"
    queue = write_queue(project_queue(tmp_path), [
        job("b", "d1", "clean turn", mode="replace"),
        job("b", "d2", f"the user asked about caching {block} and the assistant answered", mode="replace"),
        {**job("b", "d3", "clean content", mode="replace"), "item": {"content": "clean content",
                                                                     "context": f"pi session {block} tail"}},
        job("b", "d4", f"unclosed at the end: {block[: -len(marker) - 3]}", mode="replace"),
    ])
    sent: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(200, json={"operation_id": json.loads(request.content)["operation_id"]})

    client = HindsightClient("http://127.0.0.1:9", transport=httpx.MockTransport(handler), max_attempts=1)
    report = QueueFlusher(client, Redactor(b"k"), Upload()).flush(queue)
    assert (report.sent, report.dead_lettered, report.left) == (1, 3, 0)
    assert sent and all(b"RECALLED-MID" not in body for body in sent)
    assert [item["document_id"] for body in sent for item in json.loads(body)["items"]] == ["d1"]
    dead = [json.loads(line) for line in (queue.parent / "retain-queue.dead.jsonl").read_text().splitlines()]
    assert len(dead) == 3 and all("S1" in json.dumps(record) for record in dead)
    assert read_queue(queue).jobs == []


def test_a_server_that_never_finishes_processing_does_not_hang_flush(tmp_path: Path) -> None:
    """Two jobs for one document go in order: the second waits for the first's request. A server that answers
    "processing" for ever ends the wait after MAX_WAIT_SECONDS (no --max-seconds given); the second job stays
    queued for the next flush, in its place."""
    queue = write_queue(project_queue(tmp_path), [job("b", "d1", "one"), job("b", "d1", "two")])
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":  # the operation's status
            return httpx.Response(200, json={"status": "processing"})
        body = json.loads(request.content)
        sent.extend(item["content"] for item in body["items"])
        return httpx.Response(200, json={"operation_id": body["operation_id"]})

    now = [0.0]

    def sleep(seconds: float) -> None:
        assert now[0] <= MAX_WAIT_SECONDS + 10, "flush kept waiting past its bound"
        now[0] += seconds

    client = HindsightClient("http://127.0.0.1:9", transport=httpx.MockTransport(handler), max_attempts=1)
    report = QueueFlusher(client, Redactor(b"k"), Upload(), clock=lambda: now[0], sleep=sleep).flush(queue)
    assert sent == ["one"] and report.sent == 1 and report.stopped_early and report.left == 1
    assert MAX_WAIT_SECONDS <= now[0] < MAX_WAIT_SECONDS + 5
    assert [j.item["content"] for j in read_queue(queue).jobs] == ["two"]
