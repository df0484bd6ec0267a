"""The client's retry policy and the uploader's batching, against httpx's mock transport (no server needed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from hindsight_batch.config.model import Upload
from hindsight_batch.errors import EXIT_SERVER
from hindsight_batch.ledger import DocumentRow, Ledger
from hindsight_batch.sinks.hindsight import AuthError, HindsightClient, RequestRejected, UnreachableError
from hindsight_batch.sinks.upload import Uploader, operation_id

Handler = Callable[[httpx.Request], httpx.Response]


def client(
    handler: Handler, sleeps: list[float] | None = None, attempts: int = 4, key: str | None = None
) -> HindsightClient:
    record = sleeps if sleeps is not None else []
    return HindsightClient("http://127.0.0.1:9", key, transport=httpx.MockTransport(handler), max_attempts=attempts,
                           sleep=record.append)


def ok(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    return httpx.Response(200, json={"success": True, "operation_id": body.get("operation_id")})


def sequence(*responses: httpx.Response | Exception) -> tuple[Handler, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0) if queue else ok(request)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handler, seen


ITEM = [{"content": "x", "document_id": "d"}]


def test_503_honours_retry_after() -> None:
    handler, seen = sequence(httpx.Response(503, headers={"Retry-After": "7"}, json={"detail": "at capacity"}))
    sleeps: list[float] = []
    assert client(handler, sleeps).retain("b", ITEM, "op").operation_id == "op"
    assert sleeps == [7.0] and len(seen) == 2


def test_retry_after_is_capped() -> None:
    handler, _ = sequence(httpx.Response(503, headers={"Retry-After": "3600"}))
    sleeps: list[float] = []
    client(handler, sleeps).retain("b", ITEM, "op")
    assert sleeps == [60.0]


def test_500_backs_off_with_bounded_jittered_delays_then_succeeds() -> None:
    handler, seen = sequence(httpx.Response(500, json={"detail": "boom"}), httpx.Response(502), httpx.Response(500))
    sleeps: list[float] = []
    client(handler, sleeps, attempts=4).retain("b", ITEM, "op")
    assert len(seen) == 4 and len(sleeps) == 3
    assert all(0 <= s <= 20 for s in sleeps)


def test_500_every_time_fails_the_items_with_the_detail() -> None:
    handler, seen = sequence(*[httpx.Response(500, json={"detail": "db down"})] * 10)
    with pytest.raises(RequestRejected, match="db down") as error:
        client(handler, attempts=3).retain("b", ITEM, "op")
    assert error.value.status == 500 and len(seen) == 3


@pytest.mark.parametrize("status", [409, 422, 400])
def test_other_4xx_fail_just_those_items_without_retry(status: int) -> None:
    detail = [{"loc": ["body", "items", 0, "content"], "msg": "Field required"}] if status == 422 else "conflict"
    handler, seen = sequence(httpx.Response(status, json={"detail": detail}))
    with pytest.raises(RequestRejected) as error:
        client(handler).retain("b", ITEM, "op")
    assert error.value.status == status and len(seen) == 1
    assert ("Field required" if status == 422 else "conflict") in error.value.detail


def test_timeouts_and_resets_are_retried_then_reported_unreachable() -> None:
    handler, seen = sequence(httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("reset"),
                             httpx.ConnectError("refused"), httpx.ConnectError("refused"))
    with pytest.raises(UnreachableError) as error:
        client(handler, attempts=4).retain("b", ITEM, "op")
    assert len(seen) == 4 and error.value.exit_code == EXIT_SERVER


def test_a_reset_then_success_goes_through() -> None:
    handler, seen = sequence(httpx.ReadError("connection reset by peer"))
    assert client(handler).retain("b", ITEM, "op").operation_id == "op" and len(seen) == 2


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failure_ends_the_run_and_never_shows_the_key(status: int) -> None:
    handler, seen = sequence(httpx.Response(status, json={"detail": "Authentication failed: Invalid API key"}))
    with pytest.raises(AuthError) as error:
        client(handler, key="sk-test-SECRETVALUE").retain("b", ITEM, "op")
    assert error.value.exit_code == EXIT_SERVER and "SECRETVALUE" not in str(error.value)
    assert seen[0].headers["Authorization"] == "Bearer sk-test-SECRETVALUE"


def test_no_authorization_header_without_a_key() -> None:
    handler, seen = sequence()
    client(handler).retain("b", ITEM, "op")
    assert "Authorization" not in seen[0].headers


def test_ignored_params_header_is_a_bug_not_a_success() -> None:
    handler, _ = sequence(httpx.Response(200, headers={"X-Ignored-Params": "asyncc"}, json={"success": True}))
    with pytest.raises(RequestRejected, match="ignored parameters asyncc"):
        client(handler).retain("b", ITEM, "op")


def row(doc: str, bank: str = "bank") -> DocumentRow:
    return DocumentRow(bank, doc, "project", "/s.jsonl", "s", f"c-{doc}", f"h-{doc}", ["t"], {"k": "v"})


def uploader(tmp_path: Path, handler: Handler, **settings: Any) -> tuple[Uploader, Ledger]:
    ledger = Ledger(tmp_path / "state")
    config = Upload.model_validate({"batchItems": 3, "batchBytes": 10_000, "inFlight": 2, **settings})
    return Uploader(client(handler), ledger, "run-1", config), ledger


def bodies(seen: list[httpx.Request]) -> list[dict[str, Any]]:
    return [json.loads(r.content) for r in seen]


def test_batches_by_count_and_never_repeat_a_document_id_in_one_request(tmp_path: Path) -> None:
    handler, seen = sequence()
    up, ledger = uploader(tmp_path, handler)
    for doc in ["a", "b", "a", "c", "d", "e", "f"]:
        up.add(row(doc), {"content": doc, "document_id": doc}, 10)
    up.finish()
    batches = [[i["document_id"] for i in b["items"]] for b in bodies(seen)]
    assert sorted(batches) == sorted([["a", "b"], ["a", "c", "d"], ["e", "f"]])
    for body in bodies(seen):
        assert body["async"] is True
        assert body["operation_id"] == operation_id("bank", [f"h-{i['document_id']}" for i in body["items"]])
    assert dict(ledger.db.execute("SELECT status, count(*) FROM documents GROUP BY 1").fetchall()) == {"sent": 6}
    ledger.close()


def test_batches_by_bytes(tmp_path: Path) -> None:
    handler, seen = sequence()
    up, ledger = uploader(tmp_path, handler, batchItems=100, batchBytes=10_000)
    for doc in "abcd":
        up.add(row(doc), {"content": doc, "document_id": doc}, 4_000)
    up.finish()
    assert [len(b["items"]) for b in bodies(seen)] == [2, 2]
    ledger.close()


def test_operation_id_is_deterministic_and_order_free() -> None:
    assert operation_id("b", ["x", "y"]) == operation_id("b", ["y", "x"]) != operation_id("c", ["x", "y"])


def test_a_refused_batch_is_split_until_the_refused_item_is_alone(tmp_path: Path) -> None:
    """The server names one problem per request: the uploader bisects, so the others still get through."""
    def handler(request: httpx.Request) -> httpx.Response:
        items = json.loads(request.content)["items"]
        if any(i["document_id"] == "c" for i in items):
            return httpx.Response(422, json={"detail": "bad timestamp in c"})
        return ok(request)

    up, ledger = uploader(tmp_path, handler, inFlight=1)
    for doc in "abcdef":
        up.add(row(doc), {"content": doc, "document_id": doc}, 10)
    up.finish()
    rows = dict(ledger.db.execute("SELECT document_id, status FROM documents").fetchall())
    assert rows == {"a": "sent", "b": "sent", "c": "failed", "d": "sent", "e": "sent", "f": "sent"}
    error = ledger.db.execute("SELECT error, retryable FROM documents WHERE status = 'failed'").fetchone()
    assert error is not None and "bad timestamp in c" in error[0] and error[1] is False
    assert up.stats.statuses["failed"] == 1 and "bad timestamp" in up.stats.errors[0]
    ledger.close()


def test_429_honours_retry_after() -> None:
    handler, seen = sequence(httpx.Response(429, headers={"Retry-After": "4"}, json={"detail": "slow down"}))
    sleeps: list[float] = []
    assert client(handler, sleeps).retain("b", ITEM, "op").operation_id == "op"
    assert sleeps == [4.0] and len(seen) == 2


def test_wait_confirms_only_what_the_server_holds_with_our_hash(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and "/operations/" in request.url.path:
            op = request.url.path.rsplit("/", 1)[-1]
            status = "failed" if op == failing else "completed"
            return httpx.Response(200, json={"status": status, "error_message": "extraction failed"})
        if request.method == "GET":
            doc = request.url.path.rsplit("/", 1)[-1]
            held = {"a": "c-a", "b": "other"}  # b holds other content, c is not there at all
            if doc not in held:
                return httpx.Response(404, json={"detail": "Document not found"})
            return httpx.Response(200, json={"id": doc, "content_hash": held[doc]})
        return ok(request)

    failing = operation_id("bank", ["h-d"])
    up, ledger = uploader(tmp_path, handler, batchItems=3)
    for doc in "abcd":
        up.add(row(doc), {"content": doc, "document_id": doc}, 10)
    up.finish()
    assert up.wait_for_operations(30) == 0
    statuses = dict(ledger.db.execute("SELECT document_id, status FROM documents").fetchall())
    assert statuses == {"a": "confirmed", "b": "missing", "c": "missing", "d": "failed"}
    assert ledger.document_hashes()[("bank", "d")][1] == "retry"  # an operation that failed is sent again
    ledger.close()


def test_a_resend_after_the_document_settled_gets_a_new_operation_id_a_crash_retry_the_same(tmp_path: Path) -> None:
    """S5: a request left pending by a crash is retried with the same operation id (a no-op on the server); a
    document resent on purpose (missing, forgotten) gets a new one, else the server takes it for a done retry."""
    handler, seen = sequence()
    up, ledger = uploader(tmp_path, handler)
    up.add(row("a"), {"content": "a", "document_id": "a"}, 10)
    up.finish()
    ledger.set_status("bank", ["a"], "pending")  # as a crash after mark_pending leaves it
    retry = Uploader(client(handler), ledger, "run-2", Upload.model_validate({}))
    retry.add(row("a"), {"content": "a", "document_id": "a"}, 10)
    retry.finish()
    ledger.set_status("bank", ["a"], "forgotten")  # forget --confirm deleted it: the next run sends it again
    resend = Uploader(client(handler), ledger, "run-3", Upload.model_validate({}))
    resend.add(row("a"), {"content": "a", "document_id": "a"}, 10)
    resend.finish()
    ops = [body["operation_id"] for body in bodies(seen)]
    assert ops[0] == ops[1] == operation_id("bank", ["h-a"]) != ops[2]
    ledger.close()


def test_a_404_is_absence_only_where_the_call_asks_about_one_thing() -> None:
    """A document, an operation or a bank the server does not know reads as absent; a 404 to anything else (the
    bank list, a retain) is a refusal, never a normal answer."""
    handler, _ = sequence(*[httpx.Response(404, json={"detail": "Not Found"})] * 10)
    api = client(handler)
    assert api.document("b", "d") is None and api.operation("b", "op") == {"status": "not_found"}
    assert list(api.documents("b")) == [] and api.delete_document("b", "d") is False
    for call in (lambda: api.retain("b", ITEM, "op"), lambda: api.request("GET", "/v1/default/banks")):
        with pytest.raises(RequestRejected, match="HTTP 404"):
            call()
