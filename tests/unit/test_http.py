"""podium.http's resolver: what API Gateway gets back for a REST proxy event, for the
route's answer, a domain error, an unexpected error and a request no route serves."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from podium import http
from podium.errors import NotFound, Throttled

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
    return http.json_response(200, {"ok": True})


def proxy_event(method: str, path: str, **fields: Any) -> dict[str, Any]:
    return {"httpMethod": method, "path": path, "headers": None, "body": None, **fields}


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
