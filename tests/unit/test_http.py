"""podium.http's resolver: what API Gateway gets back for a REST proxy event, for the
route's answer, a domain error, an unexpected error and a request no route serves; and a
GET's validators (ETag, If-None-Match and 304)."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest

from podium import http, retry
from podium.errors import Contended, NotFound, Throttled, WriteRejected

app = http.create_app()
seen: dict[str, Any] = {}


@app.put("/boards/<boardId>/members/<memberId>")
def put_member(boardId: str, memberId: str) -> http.Response:
    seen.update(
        board=http.path_board(app, boardId),
        member=http.path_member(app, memberId),
        body=http.body(app),
        query=http.query(app),
        key=app.current_event.headers.get("Idempotency-Key"),
        context=app.lambda_context,
    )
    if seen["board"] == "missing":
        raise NotFound("board missing does not exist")
    if seen["board"] == "broken":
        raise RuntimeError("a bug")
    if seen["board"] == "throttled":
        raise Throttled("the database is throttling requests; retry after a short wait")
    if seen["board"] == "contended":
        raise retry.contended("member m")
    if seen["board"] == "rejected":
        raise WriteRejected("the score of m was not written", ["None", "ValidationError"])
    return http.json_response(200, {"ok": True})


# What the GET route below answers: a test changes it as a board would change.
ANA_FIRST = [{"rank": 1, "memberId": "ana", "score": 94}]
BO_FIRST = [{"rank": 1, "memberId": "bo", "score": 95}]
listing: dict[str, Any] = {"entries": ANA_FIRST}


@pytest.fixture(autouse=True)
def ana_first() -> None:
    listing["entries"] = ANA_FIRST


@app.get("/boards/<boardId>/top")
def top(boardId: str) -> http.Response:
    if boardId == "missing":
        raise NotFound("board missing does not exist")
    return http.json_response(200, {"boardId": boardId, **listing})


# What the REST API's edge authorizer hands the function of a route behind it, for an
# admin's token (a route without one, or the HTTP API, hands none: test_admission below).
BEHIND_THE_EDGE = {"authorizer": {"role": "admin", "memberId": "", "expiresAt": 4102444800}}


def proxy_event(method: str, path: str, **fields: Any) -> dict[str, Any]:
    return {
        "httpMethod": method,
        "path": path,
        "headers": None,
        "body": None,
        "requestContext": BEHIND_THE_EDGE,
        **fields,
    }


def test_the_route_gets_its_decoded_parameters_body_query_headers_and_context() -> None:
    # Given a PUT whose member id is percent-encoded, with a base64 body
    event = proxy_event(
        "PUT",
        "/boards/images/members/img%3A001.jpg/",
        headers={"idempotency-key": "k1"},
        queryStringParameters={"period": "daily"},
        body=base64.b64encode(b'{"score": 3}').decode(),
        isBase64Encoded=True,
    )

    # When it is resolved
    result = app.resolve(event, "the context")

    # Then the route answered with what the request carried, as a REST proxy result
    assert result == {
        "statusCode": 200,
        "body": '{"ok":true}',
        "isBase64Encoded": False,
        "multiValueHeaders": {"Content-Type": ["application/json"]},
    }
    assert seen == {
        "board": "images",
        "member": "img:001.jpg",
        "body": {"score": 3},
        "query": {"period": "daily"},
        "key": "k1",
        "context": "the context",
    }


@pytest.mark.parametrize(
    ("board", "status", "code"), [("missing", 404, "NotFound"), ("broken", 500, "InternalError")]
)
def test_errors_become_their_status_and_code(board: str, status: int, code: str) -> None:
    # When the route raises a domain error, or anything else
    result = app.resolve(proxy_event("PUT", f"/boards/{board}/members/m"), None)

    # Then the answer is the error's status, with the code and message body
    assert result["statusCode"] == status
    assert json.loads(result["body"])["code"] == code
    assert result["multiValueHeaders"] == {"Content-Type": ["application/json"]}


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/boards/images/members/m"), ("PUT", "/boards/images/members/a/b")]
)
def test_a_request_no_route_serves_is_a_404_naming_it(method: str, path: str) -> None:
    # When the method or the path is not the function's route
    result = app.resolve(proxy_event(method, path), None)

    # Then the answer is a 404 that names the request
    assert result["statusCode"] == 404
    assert json.loads(result["body"]) == {"code": "NotFound", "message": f"no route for {method} {path}"}


def test_throttled_is_a_429_with_retry_after() -> None:
    # When the database throttled the request and the retries ran out
    result = app.resolve(proxy_event("PUT", "/boards/throttled/members/m"), None)

    # Then the answer is 429 Throttled, with Retry-After in whole seconds
    assert result["statusCode"] == 429
    assert json.loads(result["body"])["code"] == "Throttled"
    assert result["multiValueHeaders"]["Retry-After"] == ["1"]


def test_contended_is_a_429_throttled_with_retry_after_and_says_what_was_contended() -> None:
    # When other writers kept winning until the request's attempts ran out
    result = app.resolve(proxy_event("PUT", "/boards/contended/members/m"), None)

    # Then the answer is 429 Throttled, with Retry-After in whole seconds, naming the item
    assert result["statusCode"] == 429
    body = json.loads(result["body"])
    assert body["code"] == "Throttled"
    assert body["message"].startswith("member m is being changed by more writers at once")
    assert result["multiValueHeaders"]["Retry-After"] == [str(retry.RETRY_AFTER_SECONDS)]


def test_a_rejected_write_is_a_500_that_says_what_was_rejected_and_logs_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # When the database cancelled a transaction for a reason the code does not expect
    with caplog.at_level(logging.ERROR):
        result = app.resolve(proxy_event("PUT", "/boards/rejected/members/m"), None)

    # Then the answer is 500 InternalError naming what was rejected, without the database's
    # codes or a stack trace, and no Retry-After; the log has the codes
    assert result["statusCode"] == 500
    assert json.loads(result["body"]) == {
        "code": "InternalError",
        "message": "the score of m was not written",
    }
    assert "Retry-After" not in result["multiValueHeaders"]
    assert "['None', 'ValidationError']" in caplog.text


@pytest.mark.parametrize(
    ("error", "status", "code", "retry_after"),
    [
        (Contended("the head of b is contended: retrying the batch"), 429, "Throttled", ["1"]),
        (retry.contended("the rivals list of m"), 429, "Throttled", ["1"]),
        (
            Contended("the count tree of b kept changing under a read; retry in 3 s", 3),
            429,
            "Throttled",
            ["3"],
        ),
        (WriteRejected("the leader was not recorded", ["None"]), 500, "InternalError", None),
        (WriteRejected("part 2 of the results of b 2026-W47 is missing"), 500, "InternalError", None),
    ],
)
def test_the_two_typed_errors_map_to_their_status_code_and_retry_after(
    error: Exception, status: int, code: str, retry_after: list[str] | None
) -> None:
    # When the one place that turns errors into answers is handed either typed error
    response = http.answer_error(error)

    # Then its status and code are the error's, with Retry-After on a 429 only, and the
    # message is the error's own (a WriteRejected's reasons stay out of it)
    assert response.status_code == status
    assert json.loads(str(response.body)) == {"code": code, "message": getattr(error, "message", None)}
    assert response.headers.get("Retry-After") == (retry_after[0] if retry_after else None)


def test_a_write_rejected_says_its_reasons_where_it_is_logged() -> None:
    assert str(WriteRejected("the rivals list was not written", ["None", "TransactionConflict"])) == (
        "the rivals list was not written: ['None', 'TransactionConflict']"
    )
    assert (
        str(WriteRejected("part 1 of the results of b d is missing"))
        == "part 1 of the results of b d is missing"
    )
    assert isinstance(retry.contended("member m"), Contended)


# -- admission: the edge's first cut, where no edge authorizer ran ------------------------------


def test_a_request_no_edge_checked_is_admitted_by_its_role_before_it_is_parsed() -> None:
    # Given requests as the HTTP API sends them (payload format 1.0: no authorizer ran,
    # no token): an admin-only route's with a body that is not JSON, and a public read's
    seen.clear()
    no_edge = {"authorizer": {"claims": None, "scopes": None}}
    write = proxy_event("PUT", "/boards/images/members/m", body="{not json", requestContext=no_edge)
    read = proxy_event("GET", "/boards/images/top", requestContext=no_edge)

    # When they are resolved
    refused = app.resolve(write, None)
    answered = app.resolve(read, None)

    # Then the write is 401 before its route ran (no 400 for its body), as behind the edge
    assert refused["statusCode"] == 401, refused["body"]
    assert json.loads(refused["body"])["code"] == "Unauthorized"
    assert seen == {}
    # And the public read goes on to its route, which decides with the board's policy
    assert answered["statusCode"] == 200
    assert app.route_key == "GET /boards/{boardId}/top"


def test_a_request_no_route_serves_has_the_default_routes_key() -> None:
    # When a request reaches a function that serves no route of it (the HTTP API's $default)
    app.resolve(proxy_event("PATCH", "/anything"), None)

    # Then its metrics' AccessPattern is the one key $default, never its path
    assert app.route_key == http.DEFAULT_ROUTE


# -- conditional reads ------------------------------------------------------------------------


def get_top(if_none_match: str | None = None, board: str = "images") -> dict[str, Any]:
    headers = {"If-None-Match": if_none_match} if if_none_match is not None else None
    return app.resolve(proxy_event("GET", f"/boards/{board}/top", headers=headers), None)


def header(result: dict[str, Any], name: str) -> str | None:
    values = result["multiValueHeaders"].get(name)
    return values[0] if values else None


def test_a_get_carries_a_strong_tag_of_its_body_and_asks_caches_to_revalidate() -> None:
    # When the same listing is read twice, and once more after it changed
    first, again = get_top(), get_top()
    listing["entries"] = BO_FIRST
    changed = get_top()

    # Then each 200 has a quoted, strong ETag (no W/) that follows the body and only it
    tag = header(first, "ETag")
    assert first["statusCode"] == 200
    assert tag is not None
    assert tag.startswith('"')
    assert tag.endswith('"')
    assert len(tag) > 10
    assert header(again, "ETag") == tag
    assert header(changed, "ETag") not in (None, tag)
    assert header(first, "Cache-Control") == "no-cache"


@pytest.mark.parametrize(
    "if_none_match",
    ["{tag}", '"other", {tag}', "W/{tag}", "*"],
    ids=["the-tag", "in-a-list", "weak-form", "any"],
)
def test_a_get_whose_if_none_match_names_the_current_tag_is_a_304_without_a_body(if_none_match: str) -> None:
    # Given the listing's current tag
    tag = header(get_top(), "ETag")
    assert tag is not None

    # When it is read again, naming that tag
    result = get_top(if_none_match.format(tag=tag))

    # Then the answer is 304 with no body, and the same validators
    assert result["statusCode"] == 304
    assert result["body"] == ""
    assert header(result, "ETag") == tag
    assert header(result, "Cache-Control") == "no-cache"
    assert header(result, "Content-Type") is None


def test_a_stale_tag_gets_the_new_body() -> None:
    # Given a tag read before the listing changed
    stale = header(get_top(), "ETag")
    listing["entries"] = BO_FIRST

    # When the listing is read with it
    result = get_top(stale)

    # Then the answer is the whole new body, under a new tag
    assert result["statusCode"] == 200
    assert json.loads(result["body"])["entries"][0]["memberId"] == "bo"
    assert header(result, "ETag") not in (None, stale)


def test_errors_and_writes_carry_no_tag_and_are_never_304() -> None:
    # When a GET fails, even with If-None-Match: *, and a PUT succeeds
    failed = get_top("*", board="missing")
    put = proxy_event("PUT", "/boards/images/members/m", headers={"If-None-Match": "*"})
    written = app.resolve(put, None)

    # Then both answer as they would without the header, with no validator
    assert failed["statusCode"] == 404
    assert written["statusCode"] == 200
    for result in (failed, written):
        assert header(result, "ETag") is None
        assert header(result, "Cache-Control") is None
