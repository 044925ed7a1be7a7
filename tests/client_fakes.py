"""What the Python client's unit tests share: a recording httpx.MockTransport, answers in
the API's shapes, and a client on them that never really sleeps."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import httpx

from podium_client import PodiumClient, RetryPolicy
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
