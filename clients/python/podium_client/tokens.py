"""Where the client's bearer tokens come from.

``PodiumClient(token=...)`` takes a string (a token that never changes), any callable
that returns a token (called for every request, so it may refresh as it likes), or one of
the providers here, which cache a token until shortly before it expires and drop it when
the service answers 401 (the client then asks once more with a new one):

* ``ClientCredentials``: a game server's token from Cognito (or any OAuth2 server) by the
  client-credentials grant, whose scope ``podium/admin`` makes it an admin;
* ``LocalIssuer``: a token from the local stack's issuer (``POST /_local/token``, only in
  ``make run``), for trying the API and for tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import httpx

from podium_client import codec
from podium_client.errors import TokenError

DEFAULT_TIMEOUT = 10.0


@runtime_checkable
class RefreshableToken(Protocol):
    """A token provider that can be told its token was refused, so that the next call
    fetches a new one."""

    def __call__(self) -> str: ...

    def invalidate(self) -> None: ...


TokenSource = str | Callable[[], str] | None


class CachedToken:
    """A token fetched by ``fetch`` and kept until ``leeway`` seconds before it expires (or
    half its lifetime before, for a short-lived one); safe to share between threads."""

    def __init__(self, *, leeway: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.leeway = leeway
        self.clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._renew_at = 0.0

    def fetch(self) -> tuple[str, float | None]:
        """A new token and its lifetime in seconds (None: unknown, kept until refused)."""
        raise NotImplementedError

    def __call__(self) -> str:
        with self._lock:
            now = self.clock()
            if self._token is None or now >= self._renew_at:
                token, lifetime = self.fetch()
                self._token = token
                early = self.leeway if lifetime is None else min(self.leeway, lifetime / 2)
                self._renew_at = float("inf") if lifetime is None else now + lifetime - early
            return self._token

    def invalidate(self) -> None:
        with self._lock:
            self._token = None


def _json_answer(response: httpx.Response, what: str) -> dict[str, Any]:
    if response.status_code != 200:
        raise TokenError(f"{what} answered {response.status_code}: {response.text[:200]}")
    try:
        body = codec.loads(response.content)
    except ValueError as error:
        raise TokenError(f"{what} answered something that is not JSON") from error
    if not isinstance(body, dict):
        raise TokenError(f"{what} answered something that is not a JSON object")
    return body


class ClientCredentials(CachedToken):
    """OAuth2's client-credentials grant (Cognito's for a game server's app client):
    ``ClientCredentials("https://<domain>.auth.<region>.amazoncognito.com/oauth2/token",
    client_id, client_secret, scope="podium/admin")``. The id and secret go as HTTP Basic
    authentication, as Cognito expects; the token is kept until ``leeway`` seconds before
    its ``expires_in``."""

    def __init__(
        self,
        token_url: str,
        client_id: str,
        client_secret: str,
        scope: str | None = None,
        *,
        leeway: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(leeway=leeway, clock=clock)
        self.token_url = token_url
        self.client_id = client_id
        self._client_secret = client_secret
        self.scope = scope
        self._http = http or httpx.Client(timeout=DEFAULT_TIMEOUT)

    def fetch(self) -> tuple[str, float | None]:
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        try:
            response = self._http.post(self.token_url, data=form, auth=(self.client_id, self._client_secret))
        except httpx.HTTPError as error:
            raise TokenError(f"the token endpoint {self.token_url} did not answer: {error}") from error
        body = _json_answer(response, "the token endpoint")
        token, expires_in = body.get("access_token"), body.get("expires_in")
        if not isinstance(token, str) or not token:
            raise TokenError("the token endpoint's answer has no access_token")
        return token, None if expires_in is None else float(expires_in)


class LocalIssuer(CachedToken):
    """Tokens from the local stack's own issuer (``POST /_local/token``; it exists only in
    ``make run`` and the tests' stacks): ``LocalIssuer(url)`` for an admin,
    ``LocalIssuer(url, role="player", member_id="alice")`` for a player."""

    def __init__(
        self,
        base_url: str,
        role: str = "admin",
        member_id: str | None = None,
        *,
        expires_in: int = 3600,
        leeway: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(leeway=leeway, clock=clock)
        self.base_url = base_url.rstrip("/")
        self.role = role
        self.member_id = member_id
        self.expires_in = expires_in
        self._http = http or httpx.Client(timeout=DEFAULT_TIMEOUT)

    def fetch(self) -> tuple[str, float | None]:
        token = local_token(
            self.base_url, self.role, self.member_id, expires_in=self.expires_in, http=self._http
        )
        return token, float(self.expires_in)


def local_token(
    base_url: str,
    role: str = "admin",
    member_id: str | None = None,
    *,
    expires_in: int | None = None,
    http: httpx.Client | None = None,
) -> str:
    """One token from the local stack's issuer (a negative ``expires_in`` mints one that
    has already expired, for tests)."""
    request: dict[str, Any] = {"role": role}
    if member_id is not None:
        request["memberId"] = member_id
    if expires_in is not None:
        request["expiresIn"] = expires_in
    url = f"{base_url.rstrip('/')}/_local/token"
    try:
        if http is None:
            response = httpx.post(url, content=codec.dumps(request), timeout=DEFAULT_TIMEOUT)
        else:
            response = http.post(url, content=codec.dumps(request))
    except httpx.HTTPError as error:
        raise TokenError(f"the local issuer at {url} did not answer: {error}") from error
    token = _json_answer(response, "the local issuer").get("token")
    if not isinstance(token, str) or not token:
        raise TokenError("the local issuer's answer has no token")
    return token
