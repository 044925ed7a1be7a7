"""The issuer's key set (podium.tokens.KeySet, podium.jwks): refreshed on a timer and for
an unknown kid, a failed fetch retried soon, an outage answered 500 (not 401), and fetched
over https only (http from a loopback issuer), without redirects, bounded in size, from a
jwks_uri on the issuer's own origin."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from devstack.issuer import AUDIENCE, LocalIssuer
from podium import jwks
from podium.errors import IssuerUnavailable, Unauthorized
from podium.tokens import (
    KEYS_MAX_AGE_SECONDS,
    RETRY_SECONDS,
    STALE_KEYS_SECONDS,
    UNKNOWN_KID_REFETCH_SECONDS,
    KeySet,
    Verifier,
)

ISSUER = LocalIssuer("http://127.0.0.1:1")
OTHER = LocalIssuer("http://127.0.0.1:1")  # the same issuer after a key rotation


def claims() -> dict[str, Any]:
    now = int(time.time())
    return {"iss": ISSUER.url, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 600}


class FakeIssuer:
    """A key set fetcher whose answer (the keys of ``publishes``, or a failure) a test sets,
    on a clock the test moves; it records when it was asked."""

    def __init__(self) -> None:
        self.now = 0.0
        self.publishes: list[LocalIssuer] = [ISSUER]
        self.down = False
        self.asked: list[float] = []

    def fetch(self) -> dict[str, Any]:
        self.asked.append(self.now)
        if self.down:
            raise OSError("connection refused")
        return {"keys": [key for issuer in self.publishes for key in issuer.jwks()["keys"]]}

    def key_set(self) -> KeySet:
        return KeySet(self.fetch, monotonic=lambda: self.now)


@pytest.fixture
def issuer() -> FakeIssuer:
    return FakeIssuer()


def test_known_keys_are_fetched_again_on_a_timer_and_a_removed_key_is_refused(issuer: FakeIssuer) -> None:
    # Given a key set fetched once
    keys = issuer.key_set()
    assert keys.key(ISSUER.kid) is not None

    # When the issuer rotates its key away, then the old key serves until the keys are
    # due again (at most an hour), and is refused from then on
    issuer.publishes = [OTHER]
    issuer.now = KEYS_MAX_AGE_SECONDS - 1
    assert keys.key(ISSUER.kid) is not None
    issuer.now = KEYS_MAX_AGE_SECONDS
    assert keys.key(ISSUER.kid) is None
    assert keys.key(OTHER.kid) is not None
    assert issuer.asked == [0.0, KEYS_MAX_AGE_SECONDS]
    assert KEYS_MAX_AGE_SECONDS <= 3600


def test_an_unknown_kid_fetches_at_most_once_a_minute(issuer: FakeIssuer) -> None:
    # Given a key set, and junk tokens naming keys nobody publishes
    keys = issuer.key_set()
    for _ in range(5):
        assert keys.key("junk") is None

    # When a minute has passed, then an unknown kid fetches again (a rotation's new key)
    issuer.now = UNKNOWN_KID_REFETCH_SECONDS
    issuer.publishes = [ISSUER, OTHER]
    assert keys.key(OTHER.kid) is not None
    assert issuer.asked == [0.0, UNKNOWN_KID_REFETCH_SECONDS]


def test_a_failed_first_fetch_is_500_and_retried_after_a_few_seconds(issuer: FakeIssuer) -> None:
    # Given an issuer that is down when the first token arrives
    keys = issuer.key_set()
    issuer.down = True

    # When tokens are checked, then each answers 500 (retryable): the token is not at fault
    with pytest.raises(IssuerUnavailable) as outage:
        keys.key(ISSUER.kid)
    assert outage.value.status == 500
    assert outage.value.code == "InternalError"
    issuer.now = RETRY_SECONDS - 0.5
    with pytest.raises(IssuerUnavailable):
        keys.key(ISSUER.kid)

    # And once the issuer is back, the next fetch comes after the short floor, not a minute
    issuer.down = False
    issuer.now = RETRY_SECONDS
    assert keys.key(ISSUER.kid) is not None
    assert issuer.asked == [0.0, RETRY_SECONDS]
    assert 1 <= RETRY_SECONDS <= 10


def test_during_an_outage_the_keys_fetched_before_still_serve(issuer: FakeIssuer) -> None:
    # Given keys fetched, then an issuer that is down when they are due again
    keys = issuer.key_set()
    keys.key(ISSUER.kid)
    issuer.down = True
    issuer.now = KEYS_MAX_AGE_SECONDS

    # When a token with the known key is checked, then it still verifies, and the fetch
    # is tried again only after the floor
    assert keys.key(ISSUER.kid) is not None
    issuer.now += 1
    assert keys.key(ISSUER.kid) is not None
    issuer.now += RETRY_SECONDS
    assert keys.key(ISSUER.kid) is not None
    assert issuer.asked == [0.0, KEYS_MAX_AGE_SECONDS, KEYS_MAX_AGE_SECONDS + 1 + RETRY_SECONDS]

    # But a key not cached cannot be told good or bad: 500
    with pytest.raises(IssuerUnavailable):
        keys.key(OTHER.kid)

    # And keys older than the stale limit no longer serve: 500
    issuer.now = STALE_KEYS_SECONDS
    with pytest.raises(IssuerUnavailable):
        keys.key(ISSUER.kid)


@pytest.mark.parametrize("document", [[], {"keys": "none"}, "keys", {"keys": [1, "x"]}])
def test_a_key_set_that_is_not_one_is_an_outage_or_no_key(issuer: FakeIssuer, document: Any) -> None:
    # Given an issuer that answers something that is not a JWKS
    keys = KeySet(lambda: document, monotonic=lambda: issuer.now)

    # When a token is checked, then it is 500 for a document that is not a key set, and
    # the key is unknown (401) for a key set without usable keys
    if isinstance(document, dict) and isinstance(document["keys"], list):
        assert keys.key(ISSUER.kid) is None
    else:
        with pytest.raises(IssuerUnavailable):
            keys.key(ISSUER.kid)


def test_the_verifier_answers_an_outage_as_500_and_the_functions_say_internal_error(
    issuer: FakeIssuer,
) -> None:
    from podium.http import answer_error

    # Given a verifier whose issuer is down
    issuer.down = True
    checker = Verifier(ISSUER.url, frozenset({AUDIENCE}), issuer.key_set())

    # When a good token is checked, then it is not refused as 401 but fails as 500
    with pytest.raises(IssuerUnavailable) as outage:
        checker.verify(ISSUER.sign(claims()))
    assert not isinstance(outage.value, Unauthorized)
    response = answer_error(outage.value)
    assert response.status_code == 500
    assert json.loads(response.body or "")["code"] == "InternalError"


def test_the_authorizer_answers_an_outage_as_a_failure_not_unauthorized(
    issuer: FakeIssuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the edge authorizer with an issuer that is down
    from podium import authorizer, identity

    issuer.down = True
    checker = Verifier(ISSUER.url, frozenset({AUDIENCE}), issuer.key_set())
    monkeypatch.setattr(identity, "verifier", lambda: checker)
    event = {
        "methodArn": "arn:aws:execute-api:us-east-1:1:api/dev/GET/boards",
        "headers": {"Authorization": f"Bearer {ISSUER.sign(claims())}"},
    }

    # When it checks a good token, then it raises something other than "Unauthorized":
    # API Gateway answers 500 (AUTHORIZER_FAILURE, retryable), not 401
    with pytest.raises(IssuerUnavailable):
        authorizer.authorize(event)


# -- fetching: https, no redirects, bounded, on the issuer's origin ------------------------


class Routes(BaseHTTPRequestHandler):
    answers: ClassVar[dict[str, tuple[int, dict[str, str], bytes]]] = {}
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).asked.append(self.path)
        status, headers, body = self.answers.get(self.path, (404, {}, b"{}"))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, Callable[[str, Any], None], list[str]]]:
    """A local http server on loopback: (its base URL, a setter of a path's JSON answer,
    the paths asked)."""
    Routes.answers, Routes.asked = {}, []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Routes)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"

    def answer(path: str, document: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        Routes.answers[path] = (status, headers or {"Content-Type": "application/json"}, body)

    try:
        yield base, answer, Routes.asked
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_keys_are_fetched_from_the_jwks_uri_of_a_loopback_issuers_configuration(server: Any) -> None:
    base, answer, asked = server
    issuer_url = f"{base}/pool"
    answer("/pool/.well-known/openid-configuration", {"issuer": issuer_url, "jwks_uri": f"{base}/keys"})
    answer("/keys", ISSUER.jwks())

    assert jwks.key_set_fetcher(issuer_url, "")() == ISSUER.jwks()
    assert asked == ["/pool/.well-known/openid-configuration", "/keys"]


@pytest.mark.parametrize(
    "url",
    [
        "http://issuer.example/keys",
        "http://10.0.0.1/keys",
        "http://169.254.169.254/latest/meta-data",
        "ftp://127.0.0.1/keys",
        "file:///etc/passwd",
        "https:///keys",
    ],
)
def test_keys_are_fetched_over_https_or_from_loopback_only(url: str) -> None:
    with pytest.raises(ValueError, match="https"):
        jwks.fetch_json(url)


def test_a_redirect_is_not_followed(server: Any) -> None:
    base, answer, asked = server
    answer("/keys", b"", status=302, headers={"Location": f"{base}/elsewhere"})
    answer("/elsewhere", ISSUER.jwks())

    with pytest.raises(OSError, match="302"):
        jwks.fetch_json(f"{base}/keys")
    assert asked == ["/keys"]


def test_a_key_set_over_the_size_bound_is_refused(server: Any) -> None:
    base, answer, _ = server
    answer("/keys", {"keys": [], "padding": "x" * jwks.MAX_DOCUMENT_BYTES})

    with pytest.raises(ValueError, match="bytes"):
        jwks.fetch_json(f"{base}/keys")


@pytest.mark.parametrize(
    "jwks_uri",
    ["https://elsewhere.example/keys", "http://127.0.0.2:{port}/keys", "http://127.0.0.1:1/keys", "/keys"],
)
def test_a_jwks_uri_off_the_issuers_origin_is_refused(server: Any, jwks_uri: str) -> None:
    # Given an issuer whose configuration names keys on another origin
    base, answer, asked = server
    issuer_url = f"{base}/pool"
    port = base.rsplit(":", 1)[1]
    answer(
        "/pool/.well-known/openid-configuration",
        {"issuer": issuer_url, "jwks_uri": jwks_uri.format(port=port)},
    )

    # When the keys are fetched, then they are not, and the uri is never asked
    with pytest.raises(ValueError, match="origin"):
        jwks.key_set_fetcher(issuer_url, "")()
    assert asked == ["/pool/.well-known/openid-configuration"]


def test_a_configuration_for_another_issuer_is_refused(server: Any) -> None:
    base, answer, _ = server
    answer("/pool/.well-known/openid-configuration", {"issuer": f"{base}/other", "jwks_uri": f"{base}/keys"})

    with pytest.raises(ValueError, match="issuer"):
        jwks.key_set_fetcher(f"{base}/pool", "")()


def test_an_unreachable_issuer_is_an_outage_through_the_key_set() -> None:
    # Given an issuer nobody listens for (a closed loopback port)
    keys = KeySet(jwks.key_set_fetcher("http://127.0.0.1:1/pool", ""))

    # When a key is asked for, then it is an outage (500), not an unknown key (401)
    with pytest.raises(IssuerUnavailable):
        keys.key(ISSUER.kid)
