"""A small httpx client for the Hindsight endpoints this tool uses, with its retry policy.

Retries (bounded in count and time): 503 honours ``Retry-After``; other 5xx, connection errors and timeouts back
off exponentially with jitter. 401/403 end the run (:class:`AuthError`, exit 4); a server that stays unreachable
ends it too (:class:`UnreachableError`, exit 4); another 4xx fails just that request's items
(:class:`RequestRejected`, with the server's detail). A response naming ``X-Ignored-Params`` means we sent a field
the server does not know: a bug in this tool, reported as :class:`RequestRejected` so the items are not marked done.
The API key goes out as ``Authorization: Bearer`` only when set, and never appears in a message: messages name
the server by its masked URL, and the key is registered with :mod:`hindsight_batch.masking`.
"""

from __future__ import annotations

import base64
import email.utils
import random
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx

from hindsight_batch import __version__
from hindsight_batch.errors import ServerError
from hindsight_batch.masking import mask, remember_secret

MAX_RETRY_AFTER = 60.0
BACKOFF_BASE = 0.5
BACKOFF_CAP = 20.0


class AuthError(ServerError):
    """401 or 403: the API key is missing or wrong."""


class UnreachableError(ServerError):
    """No answer from the server after every retry."""


class RequestRejected(Exception):
    """The server refused this request's items (a 4xx other than 401/403, or 5xx after every retry)."""

    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        self.detail = detail
        super().__init__(f"HTTP {status}: {detail}")


class _Bearer(httpx.Auth):
    def __init__(self, key: str) -> None:
        self._header = f"Bearer {key}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self._header
        yield request


@dataclass(frozen=True)
class RetainAccepted:
    operation_id: str | None


def _bank(bank_id: str) -> str:
    return f"/v1/default/banks/{quote(bank_id, safe='')}"


def _detail(response: httpx.Response) -> str:
    """The server's error detail, masked: it is printed, and stored in the ledger and in queue files."""
    try:
        body = response.json()
    except ValueError:
        return mask(response.text[:500])
    detail = body.get("detail", body) if isinstance(body, dict) else body
    return mask(str(detail)[:1000])


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class HindsightClient:
    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_attempts: int = 6,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        headers = {"User-Agent": f"hindsight-batch/{__version__}"}
        remember_secret(api_key)
        url = httpx.URL(base_url)
        if url.password:  # httpx turns userinfo into Basic auth: its password and that header are secrets too
            remember_secret(url.password)
            remember_secret(base64.b64encode(f"{url.username}:{url.password}".encode()).decode())
        # An explicit auth keeps the API key as the Bearer token even when the URL has userinfo (which httpx would
        # otherwise send as Basic auth in its place); without a key, userinfo is Basic auth, e.g. for a proxy.
        auth = _Bearer(api_key) if api_key else None
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout, transport=transport, auth=auth)
        self._base_url = mask(base_url)  # only ever used in messages
        self._attempts = max_attempts
        self._sleep = sleep
        self._rng = rng or random.Random()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HindsightClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _backoff(self, attempt: int) -> float:
        return float(self._rng.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * 2**attempt)))

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send with retries; return a 2xx or 404 response, or raise."""
        last_problem = ""
        for attempt in range(self._attempts):
            final = attempt == self._attempts - 1
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:  # connection refused or reset, timeouts, protocol errors
                last_problem = mask(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
                if final:
                    raise UnreachableError(f"no answer from {self._base_url} after {self._attempts} attempts "
                                           f"({last_problem})") from None
                self._sleep(self._backoff(attempt))
                continue
            status = response.status_code
            if status in (401, 403):
                raise AuthError(mask(f"the server at {self._base_url} refused our credentials (HTTP {status}): "
                                     f"{_detail(response)}; set HINDSIGHT_API_KEY or apiKey"))
            if status < 400 or status == 404:
                ignored = response.headers.get("X-Ignored-Params")
                if ignored:
                    raise RequestRejected(status, f"the server ignored parameters {ignored} (a hindsight-batch bug)")
                return response
            if status >= 500 or status == 429:
                if final:
                    raise RequestRejected(status, _detail(response))
                wait = _retry_after(response.headers.get("Retry-After")) if status in (429, 503) else None
                self._sleep(min(wait, MAX_RETRY_AFTER) if wait is not None else self._backoff(attempt))
                continue
            raise RequestRejected(status, _detail(response))
        raise AssertionError("unreachable")  # pragma: no cover

    def retain(self, bank_id: str, items: list[dict[str, Any]], operation_id: str) -> RetainAccepted:
        body = {"items": items, "async": True, "operation_id": operation_id}
        response = self.request("POST", f"{_bank(bank_id)}/memories", json=body)
        if response.status_code == 404:
            raise RequestRejected(404, _detail(response))
        data = response.json()
        return RetainAccepted(data.get("operation_id"))

    def operation(self, bank_id: str, operation_id: str) -> dict[str, Any]:
        response = self.request("GET", f"{_bank(bank_id)}/operations/{operation_id}")
        if response.status_code == 404:
            return {"status": "not_found"}
        result: dict[str, Any] = response.json()
        return result

    def documents(self, bank_id: str, page_size: int = 100) -> Iterator[dict[str, Any]]:
        """Every document of a bank (none if the bank does not exist), page by page."""
        offset = 0
        while True:
            response = self.request(
                "GET", f"{_bank(bank_id)}/documents",
                params={"limit": page_size, "offset": offset},
            )
            if response.status_code == 404:
                return
            data = response.json()
            items = data.get("items") or []
            yield from items
            offset += len(items)
            if not items or offset >= int(data.get("total") or 0):
                return

    def documents_tagged(self, bank_id: str, tag: str, limit: int = 100, pages: int = 100) -> list[dict[str, Any]]:
        """The documents holding ``tag`` (``tags_match=any_strict``), at most ``pages`` pages; none if the bank
        does not exist. (The live-retained check asks this for ``session:<id>`` before planning a session.)"""
        found: list[dict[str, Any]] = []
        for _ in range(pages):
            response = self.request("GET", f"{_bank(bank_id)}/documents", params={
                "tags": [tag], "tags_match": "any_strict", "limit": limit, "offset": len(found)})
            if response.status_code == 404:
                break
            data = response.json()
            items = data.get("items") or []
            found += items
            if not items or len(found) >= int(data.get("total") or 0):
                break
        return found

    def document(self, bank_id: str, document_id: str) -> dict[str, Any] | None:
        """One document (its ``updated_at``, tags, …), or None."""
        response = self.request("GET", f"{_bank(bank_id)}/documents/{quote(document_id, safe='')}")
        if response.status_code == 404:
            return None
        data: dict[str, Any] = response.json()
        return data

    def delete_document(self, bank_id: str, document_id: str) -> bool:
        response = self.request(
            "DELETE", f"{_bank(bank_id)}/documents/{quote(document_id, safe='')}"
        )
        return response.status_code != 404

    def version(self) -> str | None:
        response = self.request("GET", "/version")
        if response.status_code == 404:
            return None
        return str(response.json().get("api_version"))
