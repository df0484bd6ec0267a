"""`flush` is never blocked by one line or one job, writes nothing verbatim that could hold a secret, quarantines
idempotently across a kill, and leaves the extension's queue file as it found it (mode, owner).

The server is an ``httpx.MockTransport`` standing in for Hindsight's retain API (``test_flush.py`` drives the
real server); the CLI gets it through ``hindsight_batch.sinks.client.client_for``, an interpreted seam.
"""

from __future__ import annotations

import json
import os
import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from hindsight_batch.config.model import Upload
from hindsight_batch.queue import flush as flush_module
from hindsight_batch.queue.flush import QueueFlusher
from hindsight_batch.queue.store import read_queue
from hindsight_batch.redaction.redactor import Redactor
from hindsight_batch.sinks import client as client_module
from hindsight_batch.sinks.hindsight import HindsightClient
from tests.conftest import invoke

SECRET = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
OTHER_SECRET = "sk-ant-api03-" + "Q" * 90


def job(content: str, doc: str | None = None, **item: Any) -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "bankId": "bank", "createdAt": "2026-05-01T10:00:00.000Z",
            "documentId": doc or f"doc-{uuid.uuid4().hex[:6]}", "updateMode": "replace",
            "item": {"content": content, "context": "pi", "tags": ["harness:pi"], **item}, "retries": 0}


class FakeServer:
    """Accepts every item except one whose content is REFUSE ME: then the whole request gets a 422 whose detail
    quotes a secret (servers echo what they refuse)."""

    def __init__(self) -> None:
        self.accepted: list[dict[str, Any]] = []
        self.requests = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"api_version": "test", "status": "completed"})
        self.requests += 1
        body = json.loads(request.content)
        if any(item["content"] == "REFUSE ME" for item in body["items"]):
            return httpx.Response(422, json={"detail": f"invalid item near {OTHER_SECRET}"})
        self.accepted += body["items"]
        return httpx.Response(200, json={"operation_id": body["operation_id"]})

    def client(self) -> HindsightClient:
        return HindsightClient("http://127.0.0.1:9", transport=httpx.MockTransport(self.handle), max_attempts=1)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    fake = FakeServer()
    monkeypatch.setattr(client_module, "client_for", lambda *args, **kwargs: fake.client())
    yield fake


def write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def side(queue: Path, kind: str) -> list[dict[str, Any]]:
    path = queue.with_name(f"{queue.name.removesuffix('.jsonl')}.{kind}.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def test_no_line_or_job_blocks_the_queue_and_nothing_is_written_verbatim(
    runner: CliRunner, tmp_path: Path, server: FakeServer
) -> None:
    deep_job = job("deep")
    deep_job["item"]["extra"] = json.loads("[" * 100 + "]" * 100)
    lines = [
        json.dumps(job("first good job")),
        "[" * 100_000 + "]" * 100_000,  # nested 100k deep: the JSON parser itself gives up
        json.dumps(deep_job),  # parses, but nested deeper than any job
        json.dumps(job("cut emoji \ud83d")),  # written by JS after a slice cut a surrogate pair: \ud83d
        json.dumps({"bankId": "bank", "item": {"content": 42}}),  # fails validation
        json.dumps(job("<hindsight_memories>RECALLED</hindsight_memories> echo")),  # S1
        json.dumps(job(f"my token is {SECRET}")),  # S3
        '{"half a line with a key": "' + SECRET,  # not JSON at all, still holds a secret
        b"\xff\xfe not utf-8 ".decode("latin-1"),
        json.dumps(job("REFUSE ME")),  # the server refuses it: the rest of its request still goes
        json.dumps(job("second good job")),
    ]
    queue = write_lines(tmp_path / "proj" / ".pi" / "hindsight" / "retain-queue.jsonl", lines)

    result = invoke(runner, "flush", str(tmp_path / "proj"), "--json")

    assert result.exit_code == 1, result.stderr  # dead letters and a retry
    report = json.loads(result.output)["queues"][0]
    assert (report["sent"], report["dead_lettered"], report["quarantined"], report["retry_later"]) == (3, 2, 5, 1)
    assert report["surrogates_replaced"] == 1
    assert sorted(i["content"] for i in server.accepted) == ["cut emoji \ufffd", "first good job", "second good job"]
    # Only the refused job is left, with its failure counted and the server's detail redacted.
    left = read_queue(queue).jobs
    assert [j.item["content"] for j in left] == ["REFUSE ME"] and left[0].retries == 1
    assert "invalid item near [REDACTED:" in left[0].raw["lastError"]
    quarantined = side(queue, "malformed")
    assert len(quarantined) == 5 and all(q["reason"] for q in quarantined)
    dead = side(queue, "dead")
    assert sorted(d["lastError"][:20] for d in dead) == ["holds a secret (gith", "holds recalled memor"]
    written = "".join(p.read_text(encoding="utf-8") for p in queue.parent.iterdir() if p.is_file())
    for value in (SECRET, OTHER_SECRET):
        assert value not in written and value not in result.output + result.stderr
    assert any("[REDACTED:" in q["line"] for q in quarantined)


def test_quarantine_and_dead_letters_are_written_once_even_after_a_kill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = write_lines(tmp_path / "q.jsonl", ["{broken " + SECRET, "[" * 5000, json.dumps(job(f"key {SECRET}")),
                                               json.dumps({"not": "a job"})])
    flusher = QueueFlusher(FakeServer().client(), Redactor(b"k"), Upload())

    def killed(path: Path, keep: list[bytes]) -> None:
        raise KeyboardInterrupt  # the process dies after writing the side files, before rewriting the queue

    with monkeypatch.context() as patch:
        patch.setattr(flush_module, "rewrite_queue", killed)
        with pytest.raises(KeyboardInterrupt):
            flusher.flush(queue)
    assert len(read_queue(queue).malformed) == 3  # still in the queue
    first = (side(queue, "malformed"), side(queue, "dead"))
    assert (len(first[0]), len(first[1])) == (3, 1)
    for _ in range(2):
        flusher.flush(queue)
    assert (side(queue, "malformed"), side(queue, "dead")) == first  # not a line more
    assert queue.read_text() == ""


def test_a_rewritten_queue_keeps_its_mode_and_owner_and_side_files_are_private(
    tmp_path: Path, server: FakeServer
) -> None:
    queue = write_lines(tmp_path / "q.jsonl", [json.dumps(job("ok")), json.dumps(job("REFUSE ME")), "{broken"])
    dead = tmp_path / "q.dead.jsonl"
    dead.write_text(json.dumps({"id": "older", "lastError": "from an older version"}) + "\n")
    os.chmod(dead, 0o644)  # written world-readable by an older version
    os.chmod(queue, 0o664)
    os.chown(queue, 4242, 4343)  # the tests run as root: the queue belongs to the user pi runs as
    flusher = QueueFlusher(server.client(), Redactor(b"k"), Upload())
    old_umask = os.umask(0)
    try:
        for _ in range(5):  # the refused job is dead-lettered on its fifth failure
            flusher.flush(queue)
    finally:
        os.umask(old_umask)
    info = queue.stat()
    assert (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid) == (0o664, 4242, 4343)
    assert queue.read_text() == ""
    for kind in ("dead", "malformed"):
        assert stat.S_IMODE((tmp_path / f"q.{kind}.jsonl").stat().st_mode) == 0o600
    assert [d["id"] for d in side(queue, "dead")][:1] == ["older"] and len(side(queue, "dead")) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "q.dead.jsonl", "q.jsonl", "q.malformed.jsonl"]


def test_a_job_that_breaks_a_safety_check_is_dead_lettered_and_the_others_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: FakeServer
) -> None:
    queue = write_lines(tmp_path / "q.jsonl", [json.dumps(job(c)) for c in ("one", "BREAKS THE CHECK", "two")])
    original = flush_module.unsafe_reason

    def fragile(job: Any, redactor: Redactor) -> str | None:
        if job.item["content"] == "BREAKS THE CHECK":
            raise RecursionError(f"maximum recursion depth exceeded near {SECRET}")
        return original(job, redactor)

    monkeypatch.setattr(flush_module, "unsafe_reason", fragile)
    report = QueueFlusher(server.client(), Redactor(b"k"), Upload()).flush(queue)
    assert (report.sent, report.dead_lettered) == (2, 1)
    assert sorted(i["content"] for i in server.accepted) == ["one", "two"]
    [dead] = side(queue, "dead")
    assert dead["lastError"].startswith("could not be checked or encoded: RecursionError")
    assert SECRET not in json.dumps(dead)


def test_a_queue_that_cannot_be_read_fails_alone(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: FakeServer
) -> None:
    broken = write_lines(tmp_path / "queues" / "a.auto.jsonl", [json.dumps(job("never read"))])
    good = write_lines(tmp_path / "queues" / "b.auto.jsonl", [json.dumps(job("delivered"))])
    original = flush_module.read_queue

    def unreadable(path: Path) -> Any:
        if path == broken:
            raise PermissionError(13, "Permission denied")
        return original(path)

    monkeypatch.setattr(flush_module, "read_queue", unreadable)
    result = invoke(runner, "flush", str(tmp_path / "queues"), "--json")
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    reports = {Path(r["queue"]).name: r for r in json.loads(result.output)["queues"]}
    assert reports["a.auto.jsonl"]["failed"] and "Permission denied" in reports["a.auto.jsonl"]["errors"][0]
    assert reports["b.auto.jsonl"]["sent"] == 1 and good.read_text() == ""
    assert [i["content"] for i in server.accepted] == ["delivered"]
    assert not (tmp_path / "queues" / "a.auto.jsonl.lock").exists()  # the lock was released


def test_a_dead_letter_without_an_id_is_not_known_by_a_hash_of_its_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pi-queues layout has no job ids; a job is known by a hash of its line. A dead letter must not carry
    that hash (the line's other fields are in the file: a guessed secret could be checked against it)."""
    import hashlib

    record = {"sessionId": "s1", "bankId": "bank", "content": f"password hunter2 and {SECRET}", "tags": [],
              "document_id": "s1", "update_mode": "append"}
    line = json.dumps(record)
    queue = write_lines(tmp_path / "s1.auto.jsonl", [line])
    flusher = QueueFlusher(FakeServer().client(), Redactor(b"k"), Upload())
    with monkeypatch.context() as patch:
        patch.setattr(flush_module, "rewrite_queue", lambda path, keep: (_ for _ in ()).throw(KeyboardInterrupt))
        with pytest.raises(KeyboardInterrupt):
            flusher.flush(queue)
    flusher.flush(queue)  # after the "kill": the same record is not written twice
    [dead] = side(queue, "dead")
    written = (tmp_path / "s1.auto.dead.jsonl").read_text()
    assert hashlib.sha256(line.encode()).hexdigest()[:32] not in written and SECRET not in written
    assert dead["id"].startswith("line-sha256:") and queue.read_text() == ""


def test_a_line_queued_twice_is_two_jobs_sent_and_dead_lettered_each(tmp_path: Path, server: FakeServer) -> None:
    """The extension sends each line of its queue; a line written twice (the same id, or in the pi-queues layout
    the same bytes) is two jobs. Sending the first must not take the second out of the queue unsent, and two
    that must never go are two dead letters."""
    twice = job("the same turn, queued twice")
    flat = {"sessionId": "s1", "bankId": "bank", "content": f"key {SECRET}", "document_id": "d",
            "update_mode": "append"}
    queue = write_lines(tmp_path / "s1.auto.jsonl", [json.dumps(twice), json.dumps(twice), json.dumps(flat),
                                                     json.dumps(flat), json.dumps(job("after them"))])
    report = QueueFlusher(server.client(), Redactor(b"k"), Upload()).flush(queue)
    assert (report.jobs, report.sent, report.dead_lettered, report.left) == (5, 3, 2, 0)
    assert [i["content"] for i in server.accepted] == ["the same turn, queued twice"] * 2 + ["after them"]
    dead = side(queue, "dead")
    assert len(dead) == 2 and len({d["id"] for d in dead}) == 2 and SECRET not in json.dumps(dead)
    assert queue.read_text() == ""


def test_a_stale_lock_whose_owner_file_is_junk_is_taken_over(tmp_path: Path, server: FakeServer) -> None:
    """The owner file of a lock left behind can hold anything (a crash mid-write, a disk fault): unreadable, it
    names no live owner, so the stale lock is taken over as any other; it must not stop the queue."""
    queue = write_lines(tmp_path / "q.jsonl", [json.dumps(job("after a junk lock"))])
    lock = queue.with_name(queue.name + ".lock")
    lock.mkdir()
    (lock / "owner").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    old = time.time() - 120
    for path in (lock / "owner", lock):
        os.utime(path, (old, old))
    report = QueueFlusher(server.client(), Redactor(b"k"), Upload()).flush(queue)
    assert not report.failed, report.errors
    assert report.sent == 1 and [i["content"] for i in server.accepted] == ["after a junk lock"]
    assert not lock.exists()
