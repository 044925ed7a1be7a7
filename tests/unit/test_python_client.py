"""The Python client (clients/python) against httpx.MockTransport: what each route method
sends, what it reads back, and how it retries. The service itself is the e2e tests'."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import httpx

from podium_client import Board, Entry, Event, PodiumClient, RetryPolicy, TopPage
from podium_client.codec import dumps

Handler = Callable[[httpx.Request], httpx.Response]

BOARD = {
    "boardId": "images",
    "order": "desc",
    "operator": "increment",
    "tieBreak": "shared",
    "shards": 10,
    "title": "Most viewed images",
    "memberCount": 6,
    "clientWrites": False,
    "publicRead": True,
    "limits": {"maxValue": 1000},
    "createdAt": "2026-11-22T10:00:00Z",
}
MEMBER = {
    "boardId": "images",
    "memberId": "img-006.jpg",
    "score": 94,
    "data": {"owner": "ana"},
    "hidden": False,
    "createdAt": "2026-11-22T10:00:00Z",
    "updatedAt": "2026-11-22T10:05:00Z",
}


def answer(status: int, body: Any = None, headers: dict[str, str] | None = None) -> httpx.Response:
    content = b"" if body is None else dumps(body).encode()
    headers = {"Content-Type": "application/json", **(headers or {})}
    return httpx.Response(status, content=content, headers=headers)


class Recorder:
    """A transport that answers from ``handler`` and keeps every request it saw."""

    def __init__(self, handler: Handler) -> None:
        self.requests: list[httpx.Request] = []
        self.handler = handler

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.handler(request)

    def bodies(self) -> list[Any]:
        return [json.loads(r.content, parse_float=Decimal) if r.content else None for r in self.requests]


def client_of(handler: Handler, **kwargs: Any) -> tuple[PodiumClient, Recorder]:
    recorder = Recorder(handler)
    retry = kwargs.pop("retry", RetryPolicy(sleep=lambda _: None))
    transport = httpx.MockTransport(recorder)
    client = PodiumClient("http://podium.test", transport=transport, retry=retry, **kwargs)
    return client, recorder


def test_create_board_sends_the_settings_given_and_reads_the_board() -> None:
    # Given a service that creates the board
    client, seen = client_of(lambda request: answer(201, BOARD))

    # When a board is created with a few settings
    board = client.create_board("images", shards=10, title="Most viewed images", public_read=True)

    # Then only those settings were sent, and the board came back typed
    assert seen.requests[0].method == "PUT"
    assert seen.requests[0].url.path == "/boards/images"
    assert seen.bodies() == [{"shards": 10, "title": "Most viewed images", "publicRead": True}]
    assert isinstance(board, Board)
    assert board.created is True
    assert board.limits.max_value == Decimal(1000)
    assert board.member_count == 6


def test_every_route_reads_its_typed_result() -> None:
    # Given a service that answers each route with the contract's example body
    def route(request: httpx.Request) -> httpx.Response:
        path, method = request.url.path, request.method
        if path.endswith("/top"):
            entries = [{"rank": 1, "memberId": "img-006.jpg", "score": 94}]
            return answer(200, {"boardId": "images", "entries": entries, "total": 6, "nextCursor": None})
        if path.endswith("/rank"):
            rank = {"memberId": "u", "score": Decimal("82.3"), "rank": 211, "total": 1539}
            return answer(200, {**rank, "topPercent": Decimal("13.72")})
        if path.endswith("/score"):
            return answer(200, {"memberId": "img-001.jpg", "score": Decimal("38.2"), "previousScore": 27})
        if path.endswith("/events"):
            return answer(202, {"accepted": 2})
        if path.endswith("/rivals"):
            return answer(200, {"memberIds": ["a", "b"]})
        if method == "DELETE":
            return answer(204)
        return answer(200, MEMBER)

    client, seen = client_of(route)

    # When the routes are called, then each answer is the right model, scores exact
    page = client.top("images", limit=1)
    assert isinstance(page, TopPage)
    assert page.entries == (Entry(1, "img-006.jpg", Decimal(94)),)
    assert client.rank("images", "u").score == Decimal("82.3")
    result = client.submit_score("images", "img-001.jpg", Decimal("11.2"))
    assert (result.score, result.previous_score) == (Decimal("38.2"), Decimal(27))
    assert client.log_events("images", [Event("a", 1), Event("b", Decimal("0.5"), "e-1")]) == 2
    assert client.put_rivals("images", "c", ["a", "b", "a"]) == ("a", "b")
    assert client.get_member("images", "img-006.jpg", fresh=True).score == Decimal(94)
    client.delete_member("images", "img-006.jpg")

    # and the submission carried a key, the events an id each, the read its flag
    score_request = seen.requests[2]
    assert score_request.headers["Idempotency-Key"]
    events = seen.bodies()[3]["events"]
    assert [e["eventId"] for e in events][1] == "e-1"
    assert events[0]["eventId"]
    assert seen.requests[5].url.params["fresh"] == "true"
