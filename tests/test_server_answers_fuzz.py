"""What a server (or whatever answers at its URL: a proxy, an older version, a broken deployment) can send back,
generated: any status, any JSON shape at every key the client reads, bodies that are not JSON or are nested past
any parser's limit. Every call of the client either gives its documented result or raises one of its own errors
(:class:`ServerError`: exit 4 or the item's failure, with a message), never a decoding or type error reported as
a bug in hindsight-batch, and no message holds the API key.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hindsight_batch.sinks.hindsight import HindsightClient, RetainAccepted, ServerError

KEY = "hsk_fuzz_api_key_0123456789"
ANY_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                    max_size=3), max_leaves=6)
FIELDS = ["items", "total", "operation_id", "status", "banks", "api_version", "detail", "content_hash", "document_id"]
OBJECTS = st.dictionaries(st.sampled_from(FIELDS), ANY_JSON | st.just(KEY), max_size=4)
BODIES = (OBJECTS.map(lambda o: json.dumps(o).encode()) | ANY_JSON.map(lambda v: json.dumps(v).encode())
          | st.sampled_from([b"", b"<html>502 Bad Gateway</html>", b"{", b"\xff\xfe", b"NaN",
                             b"[" * 100_000 + b"]" * 100_000, b'{"detail":' * 50_000 + b"1" + b"}" * 50_000]))
ANSWERS = st.tuples(st.sampled_from([200, 200, 200, 201, 204, 400, 404, 409, 422, 500, 503]), BODIES,
                    st.sampled_from(["application/json", "text/html", ""]))

CALLS: dict[str, Callable[[HindsightClient], Any]] = {
    "retain": lambda c: c.retain("bank", [{"content": "x"}], "op-1"),
    "operation": lambda c: c.operation("bank", "op-1"),
    "documents": lambda c: list(c.documents("bank", page_size=2)),
    "documents_tagged": lambda c: c.documents_tagged("bank", "session:s", limit=2, pages=3),
    "document": lambda c: c.document("bank", "doc"),
    "delete_document": lambda c: c.delete_document("bank", "doc"),
    "preflight": lambda c: c.preflight(),
    "version": lambda c: c.version(),
}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(CALLS)), st.lists(ANSWERS, min_size=1, max_size=4))
@example("delete_document", [(400, b"[" * 100_000 + b"]" * 100_000, "application/json")])  # past any recursion limit
@example("documents", [(200, b'{"items": [null], "total": 1}', "application/json")])
@example("documents", [(200, b'{"items": [{}], "total": "' + KEY.encode() + b'"}', "application/json")])
def test_any_answer_is_a_result_or_a_server_error_never_a_crash(call: str, answers: list[tuple[int, bytes, str]]
                                                               ) -> None:
    served = iter(answers * 50)  # paging asks again; every loop is bounded by the client itself

    def handle(request: httpx.Request) -> httpx.Response:
        status, body, kind = next(served)
        return httpx.Response(status, content=body, headers={"Content-Type": kind} if kind else {})

    client = HindsightClient("http://127.0.0.1:9", KEY, transport=httpx.MockTransport(handle), max_attempts=1,
                             sleep=lambda seconds: None)
    try:
        result = CALLS[call](client)
    except ServerError as exc:
        assert KEY not in str(exc)
        return
    if call in ("documents", "documents_tagged"):
        assert all(isinstance(doc, dict) for doc in result)
    elif call in ("operation", "document"):
        assert result is None or isinstance(result, dict)
    elif call == "retain":
        assert isinstance(result, RetainAccepted)
    elif call in ("version", "preflight"):
        assert result is None or isinstance(result, str)
    else:
        assert isinstance(result, bool)
