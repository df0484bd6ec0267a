"""A small httpx client for the Hindsight endpoints this tool uses, with its retry policy.

Retries (bounded in count and time): 503 honours ``Retry-After``; other 5xx, connection errors and timeouts back
off exponentially with jitter. 401/403 end the run (:class:`AuthError`, exit 4); a server that stays unreachable
ends it too (:class:`UnreachableError`, exit 4), and so does an answer that is not the JSON this API gives, or a
URL httpx cannot use (:class:`BadAnswer`, exit 4). A 404 means "no such document, operation or bank" only for the
calls that ask about one (``absent_ok``); anywhere else it is a refusal like another 4xx. Another 4xx fails just
that request's items (:class:`RequestRejected`, with the server's detail). A response naming ``X-Ignored-Params``
means we sent a field the server does not know: a bug in this tool, reported as :class:`RequestRejected` so the
items are not marked done.
The API key goes out as ``Authorization: Bearer`` only when set, and never appears in a message: messages name
the server by its masked URL, and the key is registered with :mod:`hindsight_batch.base.masking`.
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
from hindsight_batch.base import jsoncodec
from hindsight_batch.base.masking import mask, remember_secret
from hindsight_batch.base.polling import Backoff
from hindsight_batch.errors import ServerError

MAX_RETRY_AFTER = 60.0
RETRY_BACKOFF = Backoff(first=0.5, factor=2.0, cap=20.0)  # the ceiling of each jittered delay between tries


def pause(seconds: float) -> None:
    """Every wait of the client (a module function, so tests can make the waits of a whole run instant)."""
    time.sleep(seconds)


class AuthError(ServerError):
    """401 or 403: the API key is missing or wrong."""


class UnreachableError(ServerError):
    """No answer from the server after every retry."""


class BadAnswer(ServerError):
    """Whatever answers at the base URL is not a Hindsight server (an HTML page, a 404 for the bank list), or the
    URL itself cannot be used."""


class RequestRejected(ServerError):
    """The server refused this request's items (a 4xx other than 401/403, or 5xx after every retry). The uploader
    and flush fail just those items; anywhere else (a read that keeps failing) it ends the command, exit 4."""

    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        self.detail = detail
        super().__init__(f"HTTP {status}: {detail}")

    @property
    def retryable(self) -> bool:
        """A server in trouble (5xx, 429, 408) may take the same items later; a 4xx refusal is about them."""
        return self.status >= 500 or self.status in (408, 429)


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


def _json(response: httpx.Response) -> Any:
    """The answer's JSON, parsed as any JSON from outside is (:func:`jsoncodec.loads`): whatever the body, a failure
    is a ValueError (a body nested past the recursion limit raised RecursionError, an internal error)."""
    return jsoncodec.loads(response.content)


def _detail(response: httpx.Response) -> str:
    """The server's error detail, masked: it is printed, and stored in the ledger and in queue files."""
    try:
        body = _json(response)
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
        sleep: Callable[[float], None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        headers = {"User-Agent": f"hindsight-batch/{__version__}"}
        remember_secret(api_key)
        try:
            url = httpx.URL(base_url)
        except httpx.InvalidURL as exc:
            raise BadAnswer(mask(f"cannot use the server URL {base_url}: {exc}")) from None
        if url.scheme not in ("http", "https") or not url.host:
            raise BadAnswer(mask(f"cannot use the server URL {base_url}: it must be http:// or https:// with a host"))
        if url.password:  # httpx turns userinfo into Basic auth: its password and that header are secrets too
            remember_secret(url.password)
            remember_secret(base64.b64encode(f"{url.username}:{url.password}".encode()).decode())
        # An explicit auth keeps the API key as the Bearer token even when the URL has userinfo (which httpx would
        # otherwise send as Basic auth in its place); without a key, userinfo is Basic auth, e.g. for a proxy.
        auth = _Bearer(api_key) if api_key else None
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout, transport=transport, auth=auth)
        self._base_url = mask(base_url)  # only ever used in messages
        self._attempts = max_attempts
        self._sleep = sleep or (lambda seconds: pause(seconds))  # looked up when called: tests replace `pause`
        self._rng = rng or random.Random()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HindsightClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _backoff(self, attempt: int) -> float:
        return float(self._rng.uniform(0, RETRY_BACKOFF.delay(attempt)))

    def request(self, method: str, path: str, *, absent_ok: bool = False, **kwargs: Any) -> httpx.Response:
        """Send with retries; return a 2xx response (or a 404 one when ``absent_ok``), or raise."""
        last_problem = ""
        for attempt in range(self._attempts):
            final = attempt == self._attempts - 1
            try:
                response = self._http.request(method, path, **kwargs)
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:  # no retry makes such a URL work
                raise BadAnswer(mask(f"cannot use the server URL {self._base_url}: {exc}")) from None
            except httpx.TransportError as exc:  # connection refused or reset, timeouts, protocol errors
                last_problem = mask(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
                if final:
                    tries = f"{self._attempts} attempt{'' if self._attempts == 1 else 's'}"
                    raise UnreachableError(f"no answer from {self._base_url} after {tries} "
                                           f"({last_problem})") from None
                self._sleep(self._backoff(attempt))
                continue
            status = response.status_code
            if status in (401, 403):
                raise AuthError(mask(f"the server at {self._base_url} refused our credentials (HTTP {status}): "
                                     f"{_detail(response)}; set HINDSIGHT_API_KEY or apiKey"))
            if status < 400 or (status == 404 and absent_ok):
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

    def _object(self, response: httpx.Response, *lists: str) -> dict[str, Any]:
        """The answer's JSON object, whose ``lists`` keys (when present) hold lists; anything else is not this API
        (an HTML page from a proxy, say): :class:`BadAnswer`, never a decoding error reported as our bug."""
        request = response.request
        where = f"{request.method} {request.url.path}"
        try:
            data = _json(response)
        except ValueError:
            kind = response.headers.get("Content-Type", "no content type").split(";")[0]
            raise BadAnswer(f"not a Hindsight server at {self._base_url}: {where} answered HTTP "
                            f"{response.status_code} with {mask(kind)[:80]}, not JSON") from None
        if not isinstance(data, dict) or any(not isinstance(data.get(key, []), list) for key in lists):
            raise BadAnswer(f"not a Hindsight server at {self._base_url}: {where} answered JSON of another shape")
        return data

    def retain(self, bank_id: str, items: list[dict[str, Any]], operation_id: str) -> RetainAccepted:
        body = {"items": items, "async": True, "operation_id": operation_id}
        response = self.request("POST", f"{_bank(bank_id)}/memories", json=body)
        operation = self._object(response).get("operation_id")
        return RetainAccepted(str(operation) if operation is not None else None)

    def operation(self, bank_id: str, operation_id: str) -> dict[str, Any]:
        response = self.request("GET", f"{_bank(bank_id)}/operations/{operation_id}", absent_ok=True)
        if response.status_code == 404:
            return {"status": "not_found"}
        return self._object(response)

    def _pages(self, bank_id: str, params: dict[str, Any], limit: int, pages: int) -> Iterator[dict[str, Any]]:
        """The bank's documents matching ``params``, ``limit`` a page, at most ``pages`` pages; none if the bank
        does not exist."""
        offset = 0
        for _ in range(pages):
            response = self.request("GET", f"{_bank(bank_id)}/documents", absent_ok=True,
                                    params={**params, "limit": limit, "offset": offset})
            if response.status_code == 404:
                return
            data = self._object(response, "items")
            items = data.get("items") or []
            total = data.get("total") or 0
            if not all(isinstance(item, dict) for item in items) or not isinstance(total, int):
                raise BadAnswer(f"not a Hindsight server at {self._base_url}: its document list answered JSON of "
                                "another shape")
            yield from items
            offset += len(items)
            if not items or offset >= total:
                return

    def documents(self, bank_id: str, page_size: int = 100) -> Iterator[dict[str, Any]]:
        """Every document of a bank (none if the bank does not exist), page by page."""
        return self._pages(bank_id, {}, page_size, pages=10_000_000)  # bounded by the server's total

    def documents_tagged(self, bank_id: str, tag: str, limit: int = 100, pages: int = 100) -> list[dict[str, Any]]:
        """The documents holding ``tag`` (``tags_match=any_strict``), at most ``pages`` pages; none if the bank
        does not exist. (The live-retained check asks this for ``session:<id>`` before planning a session.)"""
        return list(self._pages(bank_id, {"tags": [tag], "tags_match": "any_strict"}, limit, pages))

    def document(self, bank_id: str, document_id: str) -> dict[str, Any] | None:
        """One document (its ``content_hash``, ``updated_at``, tags, metadata), or None when the server does not
        hold it."""
        response = self.request("GET", f"{_bank(bank_id)}/documents/{quote(document_id, safe='')}", absent_ok=True)
        if response.status_code == 404:
            return None
        return self._object(response)

    def delete_document(self, bank_id: str, document_id: str) -> bool:
        response = self.request(
            "DELETE", f"{_bank(bank_id)}/documents/{quote(document_id, safe='')}", absent_ok=True
        )
        return response.status_code != 404

    def preflight(self) -> str | None:
        """Check the server and our credentials with an authenticated cheap call (the bank list), before any work;
        raise :class:`AuthError`, :class:`UnreachableError`, or :class:`BadAnswer` unless the bank list is a 200
        JSON object with a ``banks`` list (something else answering at the URL). Returns the server's version."""
        version = self.version()
        try:
            response = self.request("GET", "/v1/default/banks", params={"limit": 1})
        except RequestRejected as exc:
            if exc.status >= 500 or exc.status in (408, 429):
                raise
            raise BadAnswer(f"not a Hindsight server at {self._base_url}: its bank list answered {exc}") from None
        if response.status_code != 200 or not isinstance(self._object(response, "banks").get("banks"), list):
            raise BadAnswer(f"not a Hindsight server at {self._base_url}: its bank list answered HTTP "
                            f"{response.status_code} without a list of banks")
        return version

    def version(self) -> str | None:
        response = self.request("GET", "/version", absent_ok=True)  # an older server may not have it
        if response.status_code == 404:
            return None
        return str(self._object(response).get("api_version"))
