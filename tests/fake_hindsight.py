"""A fake Hindsight server that misbehaves the ways real ones do, on 127.0.0.1 (a real socket, in a thread).

It speaks the part of the API hindsight-batch uses (retain, operations, documents, banks, version) and injects:
* per item, chosen by a marker in the item's content: ``FAULT:refuse`` (the whole request gets a 400 naming that
  item, as the real server gives one detail per request), ``FAULT:drop`` (accepted, then lost: the operation is
  unknown and nothing stored; the first time only), ``FAULT:nostore`` (the operation completes, nothing is stored;
  the first time only);
* per request, by the number of the retain request (``schedule``): ``429``/``503`` with ``Retry-After``, ``500``
  without, ``timeout`` (stored, then the answer comes too late), ``reset`` (the connection is reset before the
  request is read), ``reset-after`` (reset after the request was processed), ``401``.
It counts every time it stores a document whose identical content it already held (``doubled``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.conftest import serving


@dataclass
class FakeState:
    schedule: dict[int, str] = field(default_factory=dict)
    retry_after: str = "7"
    hang_seconds: float = 3.0  # longer than the tests' client timeout (2 s)
    api_key: str | None = None
    processing_polls: int = 0  # an operation says "processing" to its first N status requests
    broken_reads: bool = False  # every document listing answers 500
    documents: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    faulted_once: set[str] = field(default_factory=set)
    retain_requests: int = 0
    received: list[dict[str, Any]] = field(default_factory=list)  # every item of every retain request, as sent
    stores: int = 0
    doubled: int = 0
    injected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def held(self, bank: str) -> dict[str, str]:
        """document id -> content hash of what the server holds in ``bank``."""
        return {doc_id: doc["content_hash"] for doc_id, doc in self.documents.get(bank, {}).items()}


def _once(state: FakeState, key: str) -> bool:
    if key in state.faulted_once:
        return False
    state.faulted_once.add(key)
    return True


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _reset(self) -> None:
        """Close with a TCP reset, no answer."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.close()

    def _authorized(self) -> bool:
        key = self.server.state.api_key
        if key and self.headers.get("Authorization") != f"Bearer {key}":
            self._send(401, {"detail": "Invalid API key"})
            return False
        return True

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        result: dict[str, Any] = json.loads(self.rfile.read(length) or b"{}")
        return result

    def do_GET(self) -> None:
        state = self.server.state
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        if url.path in ("/version", "/v1/version"):
            self._send(200, {"api_version": "1.1.0", "features": {}})
            return
        if not self._authorized():
            return
        with state.lock:
            if parts == ["v1", "default", "banks"]:
                self._send(200, {"banks": [{"bank_id": b} for b in state.documents], "total": len(state.documents)})
            elif len(parts) == 6 and parts[4] == "operations":
                op = state.operations.get(parts[5])
                status = op["status"] if op else "not_found"
                if op and op.setdefault("polls", 0) < state.processing_polls:
                    op["polls"] += 1
                    status = "processing"
                self._send(200, {"operation_id": parts[5], "status": status})
            elif len(parts) == 5 and parts[4] == "documents" and state.broken_reads:
                self._send(500, {"detail": "database is down"})
            elif len(parts) == 5 and parts[4] == "documents":
                docs = state.documents.get(parts[3])
                if docs is None:
                    self._send(404, {"detail": f"Bank '{parts[3]}' not found"})
                    return
                query = parse_qs(url.query)
                offset, limit = int(query.get("offset", ["0"])[0]), int(query.get("limit", ["100"])[0])
                items = [self._public(d) for _, d in sorted(docs.items())]
                self._send(200, {"items": items[offset : offset + limit], "total": len(items)})
            elif len(parts) == 6 and parts[4] == "documents":
                doc = state.documents.get(parts[3], {}).get(parts[5])
                self._send(200, self._public(doc)) if doc else self._send(404, {"detail": "Document not found"})
            else:
                self._send(404, {"detail": "Not Found"})

    @staticmethod
    def _public(doc: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in doc.items() if k != "content"}

    def do_DELETE(self) -> None:
        state = self.server.state
        parts = [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]
        if not self._authorized():
            return
        with state.lock:
            docs = state.documents.get(parts[3], {})
            if len(parts) == 6 and parts[5] in docs:
                del docs[parts[5]]
                self._send(200, {"success": True, "document_id": parts[5]})
            else:
                self._send(404, {"detail": "Document not found"})

    def do_POST(self) -> None:
        state = self.server.state
        parts = [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]
        with state.lock:
            state.retain_requests += 1
            fault = state.schedule.get(state.retain_requests, "")
            if fault:
                state.injected.append(fault)
        if fault == "reset":
            self._reset()
            return
        body = self._body()
        if fault == "401":
            self._send(401, {"detail": "Invalid API key"})
            return
        if not self._authorized():
            return
        if fault in ("429", "503"):
            self._send(int(fault), {"detail": "slow down"}, {"Retry-After": state.retry_after})
            return
        if fault == "500":
            self._send(500, {"detail": "internal error"})
            return
        answer = self._retain(parts[3], body)
        if fault == "timeout":
            time.sleep(state.hang_seconds)  # processed, but the answer comes after the client gave up
        if fault == "reset-after":
            self._reset()
            return
        self._send(*answer)

    def _retain(self, bank: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        state = self.server.state
        items = body.get("items") or []
        with state.lock:
            state.received.extend(items)
        for item in items:
            if "FAULT:refuse" in item["content"]:
                return 400, {"detail": f"item {item['document_id']}: content refused by the extraction guard"}
        op_id = body["operation_id"]
        with state.lock:
            if op_id in state.operations:  # a retried request: a no-op, as on the real server
                return 200, {"success": True, "operation_id": op_id, "async": True}
            dropped = any("FAULT:drop" in i["content"] and _once(state, "drop:" + i["document_id"]) for i in items)
            if dropped:  # accepted, then lost: the server no longer knows the operation
                return 200, {"success": True, "operation_id": op_id, "async": True}
            state.operations[op_id] = {"status": "completed"}
            bank_docs = state.documents.setdefault(bank, {})
            for item in items:
                if "FAULT:nostore" in item["content"] and _once(state, "nostore:" + item["document_id"]):
                    continue
                digest = hashlib.sha256(item["content"].encode()).hexdigest()
                old = bank_docs.get(item["document_id"])
                if old is not None and old["content_hash"] == digest:
                    state.doubled += 1
                state.stores += 1
                bank_docs[item["document_id"]] = {
                    "id": item["document_id"], "bank_id": bank, "content_hash": digest, "content": item["content"],
                    "tags": item.get("tags") or [], "document_metadata": item.get("metadata"),
                }
        return 200, {"success": True, "operation_id": op_id, "async": True}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: FakeState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # resets we made ourselves


@contextlib.contextmanager
def fake_hindsight(state: FakeState) -> Iterator[str]:
    """Serve ``state`` on 127.0.0.1 in a thread; yields the base URL."""
    with serving(_Server(state), poll_interval=0.05) as port:
        yield f"http://127.0.0.1:{port}"
