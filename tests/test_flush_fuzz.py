"""`flush` on any queue the extension (or a crash, a sync, a person) could leave: generated queues of jobs of both
layouts, clean or holding secrets, recall or cut surrogate pairs, with lines cut short, glued, not UTF-8, nested
too deep, not objects, blank or in Windows line ends among them.

Whatever the queue holds, a flush against a server that accepts everything ends normally and keeps every line
somewhere: sent, dead-lettered, quarantined or still queued (S5); nothing it sends holds a secret or recall
(S3, S1), nothing it writes a secret; and every whole, clean job is sent, with its content as queued.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight_batch.config.model import Upload
from hindsight_batch.queue.flush import QueueFlusher
from hindsight_batch.queue.store import read_queue, side_file
from hindsight_batch.redaction.redactor import Redactor
from hindsight_batch.sinks.hindsight import HindsightClient

SECRET = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
RECALL = "<hindsight_memories>RECALLED-IN-QUEUE</hindsight_memories>"
CLEAN_WORDS = ["fixed", "the", "build", "émoji 😀", "日本語", "a\nnew line", "quote \" and \\ slash"]
DAMAGE = ["none", "none", "none", "cut", "glued", "invalid-utf8", "deep", "not-an-object", "crlf", "blank"]


class AcceptingServer:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":  # operation status
            return httpx.Response(200, json={"status": "completed"})
        body = json.loads(request.content)
        self.items += body["items"]
        return httpx.Response(200, json={"operation_id": body.get("operation_id", "op")})


@st.composite
def queued_lines(draw: st.DrawFn) -> tuple[list[bytes], list[str]]:
    """Lines of a queue file, and the contents of the whole, clean jobs among them (which must be sent)."""
    lines: list[bytes] = []
    clean: list[str] = []
    for _ in range(draw(st.integers(1, 8))):
        words = draw(st.lists(st.sampled_from(CLEAN_WORDS), min_size=1, max_size=4))
        taint = draw(st.sampled_from(["clean", "clean", "secret", "recall", "surrogate"]))
        content = " ".join(words) + {"clean": "", "secret": f" token {SECRET}", "recall": f" {RECALL}",
                                     "surrogate": " cut \ud83d"}[taint]
        document = f"pi-session:{draw(st.sampled_from(['a', 'b', 'c']))}"
        mode = draw(st.sampled_from(["append", "replace"]))
        if draw(st.booleans()):  # the project queue's layout
            job: dict[str, Any] = {
                "id": str(uuid.uuid4()), "bankId": "bank", "createdAt": "2026-05-01T10:00:00.000Z",
                "documentId": document, "updateMode": mode, "retries": draw(st.integers(0, 3)),
                "item": {"content": content, "context": "pi", "tags": ["harness:pi"],
                         "metadata": {"source": "pi"}},
            }
        else:  # ~/.hindsight/pi-queues: flat records without an id
            job = {"sessionId": "s1", "bankId": "bank", "content": content, "context": "pi", "tags": ["harness:pi"],
                   "timestamp": "2026-05-01T10:00:00.000Z", "document_id": document, "update_mode": mode}
        line = json.dumps(job, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
        damage = draw(st.sampled_from(DAMAGE))
        if damage == "cut":
            line = line[: draw(st.integers(1, len(line) - 1))]
        elif damage == "glued":
            line += json.dumps(job).encode()
        elif damage == "invalid-utf8":
            line = line.replace(b"pi", b"p\xff", 1)
        elif damage == "deep":
            line = b"[" * 200 + line + b"]" * 200
        elif damage == "not-an-object":
            line = draw(st.sampled_from([b"42", b'"a string"', b"null", b"INFO retained 3 items", b"[]"]))
        elif damage == "crlf":
            line += b"\r"
        elif damage == "blank":
            line = b"  \t"
        if damage in ("none", "crlf") and taint == "clean":
            clean.append(content)
        lines.append(line)
    return lines, clean


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queued_lines(), st.sampled_from(["project", "pi-queues"]))
def test_any_queue_is_flushed_with_every_line_kept_somewhere_and_nothing_unsafe(
    queue: tuple[list[bytes], list[str]], layout: str
) -> None:
    lines, clean = queue
    server = AcceptingServer()
    client = HindsightClient("http://127.0.0.1:9", transport=httpx.MockTransport(server.handle), max_attempts=1)
    flusher = QueueFlusher(client, Redactor(b"fuzz"), Upload(), sleep=lambda seconds: None)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("retain-queue.jsonl" if layout == "project" else "s1.auto.jsonl")
        path.write_bytes(b"".join(line + b"\n" for line in lines))
        report = flusher.flush(path)
        left = read_queue(path)
        written = {kind: side_file(path, kind).read_bytes() if side_file(path, kind).exists() else b""
                   for kind in ("dead", "malformed")}
        queue_after = path.read_bytes()
    lines_in = [line for line in lines if line.strip()]
    assert not report.failed and not report.busy, report.errors
    assert report.jobs + report.quarantined == len(lines_in)  # every line read as a job or quarantined
    assert report.sent + report.dead_lettered + report.left == report.jobs  # every job somewhere
    assert report.sent == len(server.items) and not left.malformed and len(left.jobs) == report.left
    dead = [json.loads(line) for line in written["dead"].splitlines()]
    quarantined = [json.loads(line) for line in written["malformed"].splitlines()]
    assert len(dead) == report.dead_lettered
    assert 0 < len(quarantined) <= report.quarantined or report.quarantined == 0 == len(quarantined)
    sent_text = json.dumps(server.items, ensure_ascii=False)
    assert SECRET not in sent_text and "RECALLED-IN-QUEUE" not in sent_text  # S3, S1: never sent
    assert SECRET.encode() not in written["dead"] + written["malformed"]  # nor written by us (S3)
    assert "\ud83d" not in sent_text  # a cut surrogate pair is sent as U+FFFD, never as invalid JSON text
    assert sorted(item["content"] for item in server.items if item["content"] in clean) == sorted(clean)
    assert all(line in queue_after.split(b"\n") for line in (job.line for job in left.jobs))
