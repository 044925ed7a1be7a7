"""The Python client's retries and tokens, against httpx.MockTransport with the policy's
sleep and random replaced: when it sends again and when it must not, how long it waits,
that a submission keeps its Idempotency-Key across retries, and where tokens come from."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from podium_client import (
    ApiError,
    ClientCredentials,
    Conflict,
    Event,
    Forbidden,
    InternalError,
    LocalIssuer,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    RetryPolicy,
    Throttled,
    TransportError,
    Unauthorized,
    ValidationError,
)
from podium_client.transport import Call, Sender
from tests.client_fakes import MEMBER, Handler, Recorder, answer, client_of

SCORED = {"memberId": "m", "score": 5, "previousScore": 0}
NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


class Sleeps:
    """The policy's sleep: it records each delay instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def policy(sleeps: Sleeps, draws: list[float] | None = None, **settings: Any) -> RetryPolicy:
    """A policy whose random() gives ``draws`` in turn (1.0 for ever when none)."""
    given: Iterator[float] = iter(draws or [])
    return RetryPolicy(sleep=sleeps, random=lambda: next(given, 1.0), now=lambda: NOW, **settings)


def answers(*responses: httpx.Response | Exception) -> Handler:
    """A service that answers ``responses`` in turn, then the last one for ever; an
    exception is raised as the transport would raise it."""
    queue = list(responses)

    def handler(request: httpx.Request) -> httpx.Response:
        next_one = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(next_one, Exception):
            raise next_one
        return next_one

    return handler


# -- backoff ------------------------------------------------------------------------------


def test_backoff_doubles_up_to_the_cap_then_gives_up() -> None:
    # Given a service that always fails, and draws at the top of every range
    sleeps = Sleeps()
    client, seen = client_of(
        answers(answer(503, {"code": "InternalError", "message": "down"})),
        retry=policy(sleeps, max_attempts=6, base_delay=0.1, max_delay=0.5),
    )

    # When a read is made, then it is tried 6 times and the last error raised
    with pytest.raises(InternalError) as failed:
        client.get_board("b")
    assert (failed.value.status, failed.value.message) == (503, "down")
    assert len(seen.requests) == 6

    # And the waits between were the exponential ceilings, capped
    assert sleeps.delays == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5])


def test_full_jitter_draws_each_wait_from_zero_to_its_ceiling() -> None:
    # Given draws of 0, 0.5 and 0.25
    sleeps = Sleeps()
    client, _ = client_of(
        answers(answer(500, {}), answer(500, {}), answer(500, {}), answer(200, MEMBER)),
        retry=policy(sleeps, [0.0, 0.5, 0.25], base_delay=1.0, max_delay=10.0),
    )

    # When a read succeeds on its fourth try
    client.get_member("b", "m")

    # Then each wait was its draw times its ceiling (1, 2, 4): anywhere from 0 to it
    assert sleeps.delays == pytest.approx([0.0, 1.0, 1.0])


def test_retry_after_in_seconds_is_waited_instead_of_the_backoff() -> None:
    sleeps = Sleeps()
    limited = answer(429, {"code": "RateLimited", "message": "slow down"}, {"Retry-After": "7"})
    client, seen = client_of(answers(limited, answer(200, SCORED)), retry=policy(sleeps))

    assert client.submit_score("b", "m", 5).score == Decimal(5)
    assert sleeps.delays == [7.0]
    assert len(seen.requests) == 2


def test_retry_after_as_an_http_date_is_waited_until() -> None:
    sleeps = Sleeps()
    date = format_datetime(NOW + timedelta(seconds=30), usegmt=True)
    throttled = answer(429, {"code": "Throttled", "message": "busy"}, {"Retry-After": date})
    past = answer(503, {}, {"Retry-After": format_datetime(NOW - timedelta(seconds=5), usegmt=True)})
    client, _ = client_of(answers(throttled, past, answer(200, MEMBER)), retry=policy(sleeps))

    client.get_member("b", "m")

    assert sleeps.delays == [30.0, 0.0]


def test_a_retry_after_longer_than_the_policy_takes_is_raised_at_once() -> None:
    sleeps = Sleeps()
    limited = answer(429, {"code": "RateLimited", "message": "at most 1 a minute"}, {"Retry-After": "45"})
    client, seen = client_of(answers(limited), retry=policy(sleeps, max_retry_after=10))

    with pytest.raises(RateLimited) as refused:
        client.submit_score("b", "m", 1)

    assert (refused.value.status, refused.value.code, refused.value.retry_after) == (429, "RateLimited", 45.0)
    assert sleeps.delays == []
    assert len(seen.requests) == 1


def test_throttling_that_outlasts_the_attempts_is_raised_with_its_retry_after() -> None:
    sleeps = Sleeps()
    throttled = answer(429, {"code": "Throttled", "message": "busy"}, {"Retry-After": "1"})
    client, seen = client_of(answers(throttled), retry=policy(sleeps, max_attempts=3))

    with pytest.raises(Throttled) as refused:
        client.top("b")

    assert refused.value.retry_after == 1.0
    assert (len(seen.requests), sleeps.delays) == (3, [1.0, 1.0])


# -- what is sent again, and with what -----------------------------------------------------


def test_every_retry_of_a_submission_carries_its_one_idempotency_key() -> None:
    # Given a service that fails twice (a 500, then a lost answer), then applies it
    in_flight = answer(
        409,
        {
            "code": "Conflict",
            "message": "a request with this Idempotency-Key was just applied; retry shortly",
        },
    )
    client, seen = client_of(
        answers(
            answer(500, {}), httpx.ReadError("reset"), in_flight, answer(200, SCORED), answer(200, SCORED)
        )
    )

    # When one submission is made, and then another
    client.submit_score("b", "m", 5)
    client.submit_score("b", "m", 5)

    # Then the four tries of the first sent one key, and the second call another
    keys = [r.headers["Idempotency-Key"] for r in seen.requests]
    assert len(keys) == 5
    assert len(set(keys[:4])) == 1
    assert keys[4] != keys[0]


def test_a_key_given_by_the_caller_is_the_one_sent() -> None:
    client, seen = client_of(answers(answer(500, {}), answer(200, SCORED)))

    client.submit_score("b", "m", 5, idempotency_key="view-7f3a")

    assert [r.headers["Idempotency-Key"] for r in seen.requests] == ["view-7f3a", "view-7f3a"]


def test_a_retried_batch_of_events_keeps_the_ids_it_was_given() -> None:
    client, seen = client_of(answers(httpx.ReadTimeout("slow"), answer(202, {"accepted": 2})))

    assert client.log_events("b", [Event("m", 1), Event("m", 2, "mine")]) == 2

    first, second = seen.bodies()
    assert first == second
    assert first["events"][1]["eventId"] == "mine"
    assert first["events"][0]["eventId"]


def test_events_sent_without_ids_on_request_are_not_sent_again_once_they_may_have_arrived() -> None:
    client, seen = client_of(answers(httpx.ReadTimeout("slow"), answer(202, {"accepted": 1})))

    with pytest.raises(TransportError):
        client.log_events("b", [Event("m", 1)], assign_ids=False)

    assert seen.bodies() == [{"events": [{"memberId": "m", "value": 1}]}]


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (400, {"code": "ValidationError", "message": "value must be a JSON number"}, ValidationError),
        (401, {"code": "Unauthorized", "message": "a bearer token is required"}, Unauthorized),
        (403, {"code": "Forbidden", "message": "a player may only submit its own score"}, Forbidden),
        (404, {"code": "NotFound", "message": "member m does not exist"}, NotFound),
        (409, {"code": "Conflict", "message": "board b exists with different settings: shards"}, Conflict),
        (413, {"code": "PayloadTooLarge", "message": "the body is over the limit"}, PayloadTooLarge),
    ],
)
def test_other_client_errors_are_raised_at_once(
    status: int, body: dict[str, str], error: type[ApiError]
) -> None:
    sleeps = Sleeps()
    client, seen = client_of(answers(answer(status, body)), retry=policy(sleeps), token="static")

    with pytest.raises(error) as raised:
        client.submit_score("b", "m", 1)

    assert (raised.value.status, raised.value.code, raised.value.message) == (
        status,
        body["code"],
        body["message"],
    )
    assert len(seen.requests) == 1
    assert sleeps.delays == []


def test_an_answer_without_the_error_shape_is_raised_by_its_status() -> None:
    html = httpx.Response(502, content=b"<html>Bad Gateway</html>", headers={"Content-Type": "text/html"})
    client, _ = client_of(answers(html), retry=policy(Sleeps(), max_attempts=2))

    with pytest.raises(InternalError) as raised:
        client.get_board("b")

    assert (raised.value.status, raised.value.code) == (502, "InternalError")


def test_a_request_that_may_have_arrived_is_not_resent_unless_repeatable() -> None:
    # Given a sender, and a call that the contract does not make safe to repeat
    for failure in (answer(500, {}), httpx.ReadError("reset")):
        recorder = Recorder(answers(failure, answer(200, {})))
        http = httpx.Client(base_url="http://podium.test", transport=httpx.MockTransport(recorder))
        sender = Sender(http, None, policy(Sleeps()))
        once_only = Call("POST", "/boards/b/members/m/score", body={"value": 1}, repeatable=False)

        # When its answer is a 500 or is lost, then it is not sent again
        with pytest.raises(InternalError if isinstance(failure, httpx.Response) else TransportError):
            sender.send(once_only)
        assert len(recorder.requests) == 1


def test_a_connection_never_made_is_retried_whatever_the_request() -> None:
    recorder = Recorder(answers(httpx.ConnectError("refused"), answer(200, {"ok": True})))
    http = httpx.Client(base_url="http://podium.test", transport=httpx.MockTransport(recorder))
    sender = Sender(http, None, policy(Sleeps()))

    response = sender.send(Call("POST", "/x", body={}, repeatable=False))

    assert response.status_code == 200
    assert len(recorder.requests) == 2


def test_connection_errors_that_outlast_the_attempts_are_a_transport_error() -> None:
    sleeps = Sleeps()
    client, seen = client_of(answers(httpx.ConnectTimeout("no route")), retry=policy(sleeps, max_attempts=3))

    with pytest.raises(TransportError):
        client.get_board("b")

    assert len(seen.requests) == 3
    assert len(sleeps.delays) == 2


# -- tokens -------------------------------------------------------------------------------


def test_a_token_callable_is_called_for_every_request_and_retry() -> None:
    minted: list[str] = []

    def token() -> str:
        minted.append(f"t{len(minted)}")
        return minted[-1]

    client, seen = client_of(answers(answer(500, {}), answer(200, MEMBER)), token=token)

    client.get_member("b", "m")
    client.get_member("b", "m")

    assert [r.headers["Authorization"] for r in seen.requests] == ["Bearer t0", "Bearer t1", "Bearer t2"]


class TokenEndpoint:
    """An OAuth2 token endpoint that hands out t1, t2, ... each valid for ``lifetime``."""

    def __init__(self, lifetime: int = 3600) -> None:
        self.lifetime = lifetime
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = {"access_token": f"t{len(self.requests)}", "expires_in": self.lifetime, "token_type": "Bearer"}
        return answer(200, body)


def credentials(endpoint: TokenEndpoint, clock: list[float]) -> ClientCredentials:
    http = httpx.Client(transport=httpx.MockTransport(endpoint))
    return ClientCredentials(
        "https://auth.test/oauth2/token", "app", "s3cret", "podium/admin", clock=lambda: clock[0], http=http
    )


def test_client_credentials_are_fetched_once_and_kept_until_shortly_before_expiry() -> None:
    # Given a token endpoint whose tokens live an hour, and the provider's clock at 0
    endpoint, clock = TokenEndpoint(3600), [0.0]
    provider = credentials(endpoint, clock)

    # When the token is asked for again and again within the hour
    assert [provider() for _ in range(3)] == ["t1", "t1", "t1"]
    clock[0] = 3600 - 61
    assert provider() == "t1"

    # Then it was fetched once, by the client-credentials grant with Basic authentication
    [grant] = endpoint.requests
    assert grant.method == "POST"
    assert dict(httpx.QueryParams(grant.content.decode())) == {
        "grant_type": "client_credentials",
        "scope": "podium/admin",
    }
    assert grant.headers["Authorization"] == "Basic " + base64.b64encode(b"app:s3cret").decode()

    # And within a minute of its expiry a new one is fetched
    clock[0] = 3600 - 59
    assert provider() == "t2"
    assert len(endpoint.requests) == 2


def test_a_401_drops_the_providers_token_and_the_request_is_sent_once_more() -> None:
    # Given a service that refuses t1 (revoked) but takes t2
    endpoint = TokenEndpoint()
    provider = credentials(endpoint, [0.0])

    def service(request: httpx.Request) -> httpx.Response:
        if request.headers["Authorization"] == "Bearer t1":
            return answer(401, {"code": "Unauthorized", "message": "the token has been revoked"})
        return answer(200, MEMBER)

    client, seen = client_of(service, token=provider)

    # When a request is made, then it succeeds with a new token, and the new one is kept
    client.get_member("b", "m")
    client.get_member("b", "m")
    assert [r.headers["Authorization"] for r in seen.requests] == ["Bearer t1", "Bearer t2", "Bearer t2"]
    assert len(endpoint.requests) == 2


def test_a_token_refused_again_after_the_refresh_is_unauthorized() -> None:
    endpoint = TokenEndpoint()
    client, seen = client_of(
        answers(answer(401, {"code": "Unauthorized", "message": "wrong audience"})),
        token=credentials(endpoint, [0.0]),
    )

    with pytest.raises(Unauthorized):
        client.get_board("b")

    assert len(seen.requests) == 2
    assert len(endpoint.requests) == 2


def test_the_local_issuer_mints_the_role_asked_for_and_keeps_it() -> None:
    issued: list[Any] = []

    def issuer(request: httpx.Request) -> httpx.Response:
        issued.append((request.url.path, request.content))
        return answer(200, {"token": f"local-{len(issued)}"})

    http = httpx.Client(transport=httpx.MockTransport(issuer))
    provider = LocalIssuer(
        "http://127.0.0.1:3000/", role="player", member_id="alice", expires_in=600, http=http
    )

    assert [provider(), provider()] == ["local-1", "local-1"]
    assert issued == [("/_local/token", b'{"role":"player","memberId":"alice","expiresIn":600}')]
