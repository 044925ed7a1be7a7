"""One request to the service, sent until it succeeds or may not be sent again.

What may be sent again follows the contract (docs/api.md): a 429 changed nothing, and
neither did a 409 whose message asks for a retry (a keyed duplicate still in flight), so
those are always retried. A 5xx or a lost
answer may have been applied, so they are retried only for a request that is safe to
repeat: a GET, a PUT or a DELETE, a score submission with its ``Idempotency-Key``, events
with their ``eventId``s, and ``POST .../ranks`` (a read). A connection that was never made
reached nothing, and is retried whatever the request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from podium_client import codec
from podium_client.errors import ApiError, Conflict, TooManyRequests, TransportError, error_for
from podium_client.retry import RetryPolicy
from podium_client.tokens import RefreshableToken, TokenSource

# The service ends a transient Conflict's message by telling the client to retry; a board
# that exists with other settings says no such thing, and is final.
_ASKS_FOR_RETRY = re.compile(r"\bretry\b", re.IGNORECASE)
# Failures before the request left: nothing reached the service.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class Call:
    """A request as a route method describes it. ``repeatable``: the contract makes
    sending it twice the same as sending it once. ``expect``: the statuses that are
    answers rather than errors (a 304 for a conditional read)."""

    method: str
    path: str
    params: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    repeatable: bool = True
    expect: frozenset[int] = frozenset()


def _token_function(token: TokenSource) -> Callable[[], str | None]:
    if token is None:
        return lambda: None
    if isinstance(token, str):
        return lambda: token
    return token


def _body_of(response: httpx.Response) -> Any:
    try:
        return codec.loads(response.content) if response.content else None
    except ValueError:
        return None


class Sender:
    """Sends Calls over one ``httpx.Client``, with the token and retries of its client."""

    def __init__(self, http: httpx.Client, token: TokenSource, retry: RetryPolicy) -> None:
        self.http = http
        self.token_source = token
        self._token = _token_function(token)
        self.retry = retry

    def send(self, call: Call) -> httpx.Response:
        """The answer to ``call``: a 2xx, or one of ``call.expect``; else the ApiError of the
        last answer, or a TransportError when the last try got none."""
        attempt, refreshed = 0, False
        while True:
            attempt += 1
            try:
                response = self.http.send(self._request(call))
            except httpx.TransportError as lost:
                retry_now = isinstance(lost, _NOT_SENT) or call.repeatable
                if not retry_now or attempt >= self.retry.max_attempts:
                    raise TransportError(f"{call.method} {call.path}: no answer ({lost!r})") from lost
                self.retry.sleep(self.retry.backoff(attempt - 1))
                continue
            if response.status_code < 400 or response.status_code in call.expect:
                return response
            error = self._error(response)
            provider = self.token_source
            if response.status_code == 401 and not refreshed and isinstance(provider, RefreshableToken):
                # The provider's token was refused (revoked, or expired early): once, with a new one.
                refreshed = True
                attempt -= 1
                provider.invalidate()
                continue
            if not self._may_retry(error, call) or attempt >= self.retry.max_attempts:
                raise error
            # Retry-After is honoured on any answer that carries it (a 503's too, per RFC 9110).
            delay = self.retry.delay(attempt - 1, self.retry.retry_after(response.headers.get("Retry-After")))
            if delay is None:
                raise error
            self.retry.sleep(delay)

    def _request(self, call: Call) -> httpx.Request:
        headers = {"Accept": "application/json", **call.headers}
        token = self._token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        content = None
        if call.body is not None:
            content = codec.dumps(call.body).encode()
            headers["Content-Type"] = "application/json"
        return self.http.build_request(
            call.method, call.path, params=call.params, headers=headers, content=content
        )

    def _error(self, response: httpx.Response) -> ApiError:
        retry_after = self.retry.retry_after(response.headers.get("Retry-After"))
        return error_for(response.status_code, _body_of(response), retry_after)

    @staticmethod
    def _may_retry(error: ApiError, call: Call) -> bool:
        if isinstance(error, TooManyRequests):
            return True
        if isinstance(error, Conflict):
            return bool(_ASKS_FOR_RETRY.search(error.message))
        return error.status >= 500 and call.repeatable
