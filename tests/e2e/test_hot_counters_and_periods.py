"""Hot counters and time, end to end over HTTP against the local stack: the event log
under load, fresh reads, period boundaries with an injected clock, expiry."""

from __future__ import annotations

import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pytest
import requests

from tests.helpers import decimal_json, eventually, unique_id

pytestmark = pytest.mark.e2e

TIMEOUT = 60


def _put(url: str, body: Any) -> Any:
    response = requests.put(url, json=body, timeout=TIMEOUT)
    assert response.status_code in (200, 201), response.text
    return response.json()


def _member(stack_url: str, board: str, member: str, **params: str) -> Any:
    response = requests.get(f"{stack_url}/boards/{board}/members/{member}", params=params, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return decimal_json(response)


def _log(stack_url: str, board: str, events: list[dict[str, Any]]) -> None:
    response = requests.post(f"{stack_url}/boards/{board}/events", json={"events": events}, timeout=TIMEOUT)
    assert response.status_code == 202, response.text
    assert response.json() == {"accepted": len(events)}


def test_20000_events_from_16_clients_half_sent_twice_count_once(stack_url: str) -> None:
    # Given a viral image, and 20,000 distinct views of which half are sent twice
    board = unique_id("viral")
    _put(f"{stack_url}/boards/{board}", {})
    _put(f"{stack_url}/boards/{board}/members/img-006.jpg", {})
    views = [{"memberId": "img-006.jpg", "value": 1, "eventId": f"v-{i}"} for i in range(20_000)]
    sends = views + views[::2]
    random.Random(7).shuffle(sends)
    requests_ = [sends[i : i + 100] for i in range(0, len(sends), 100)]

    # When 16 clients send them at once
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda chunk: _log(stack_url, board, chunk), requests_))

    # Then the folded score is the number of distinct events, exactly, and nothing is pending
    def folded() -> None:
        assert _member(stack_url, board, "img-006.jpg")["score"] == 20_000

    eventually(folded, timeout=300, interval=2.0)
    fresh = _member(stack_url, board, "img-006.jpg", fresh="true")
    assert (fresh["score"], fresh["pendingEvents"]) == (20_000, 0)


def test_a_fresh_read_is_the_true_total_before_the_fold(stack_url: str) -> None:
    # Given an image with 5 views
    board = unique_id("fresh")
    _put(f"{stack_url}/boards/{board}", {})
    _put(f"{stack_url}/boards/{board}/members/img-1", {"score": 5})

    # When 250 views (some with ids, one id repeated, some decimal) are logged
    events = [{"memberId": "img-1", "value": 1, "eventId": f"e-{i}"} for i in range(200)]
    events += [{"memberId": "img-1", "value": Decimal("0.5")} for _ in range(49)]
    events.append({"memberId": "img-1", "value": 1, "eventId": "e-0"})
    for start in range(0, len(events), 100):
        _log(stack_url, board, [_jsonable(e) for e in events[start : start + 100]])
    first = _member(stack_url, board, "img-1", fresh="true")

    # Then the fresh read is the true total at once, while the fold has work left
    assert first["score"] == Decimal("229.5")
    assert first["pendingEvents"] > 0
    assert _member(stack_url, board, "img-1")["score"] < Decimal("229.5")

    # And once folded, the plain read agrees and nothing is pending
    def folded() -> None:
        member = _member(stack_url, board, "img-1", fresh="true")
        assert (member["score"], member["pendingEvents"]) == (Decimal("229.5"), 0)
        assert _member(stack_url, board, "img-1")["score"] == Decimal("229.5")

    eventually(folded, timeout=60)


def _jsonable(event: dict[str, Any]) -> dict[str, Any]:
    return {k: float(v) if isinstance(v, Decimal) else v for k, v in event.items()}


def test_events_for_unknown_members_are_dropped_and_counted(stack_url: str) -> None:
    board = unique_id("dropped")
    _put(f"{stack_url}/boards/{board}", {})
    _log(stack_url, board, [{"memberId": "nobody", "value": 1}, {"memberId": "nobody", "value": 2}])

    def counted() -> None:
        assert requests.get(f"{stack_url}/boards/{board}", timeout=TIMEOUT).json().get("droppedEvents") == 2

    eventually(counted)
    assert requests.get(f"{stack_url}/boards/{board}/members/nobody", timeout=TIMEOUT).status_code == 404


def test_only_increment_boards_take_events_and_requests_are_checked_whole(stack_url: str) -> None:
    board = unique_id("best")
    _put(f"{stack_url}/boards/{board}", {"operator": "best"})
    refused = requests.post(
        f"{stack_url}/boards/{board}/events",
        json={"events": [{"memberId": "a", "value": 1}]},
        timeout=TIMEOUT,
    )
    assert refused.status_code == 400
    assert "increment" in refused.json()["message"]
    other = unique_id("inc")
    _put(f"{stack_url}/boards/{other}", {})
    for body, field in (
        ({"events": []}, "events"),
        ({"events": [{"memberId": "a", "value": 1}] * 101}, "events"),
        ({"events": [{"memberId": "a", "value": 1}, {"memberId": "a", "value": "1"}]}, "events[1].value"),
        ({"events": [{"memberId": "a", "value": 1, "eventId": "x" * 129}]}, "events[0].eventId"),
        ({"events": [{"memberId": "-a", "value": 1}]}, "events[0].memberId"),
    ):
        response = requests.post(f"{stack_url}/boards/{other}/events", json=body, timeout=TIMEOUT)
        assert response.status_code == 400, body
        assert field in response.json()["message"]


# -- time-windowed boards, with the stack's clock moved over HTTP --------------------------------


@pytest.fixture
def set_clock(stack_url: str) -> Iterator[Any]:
    def move(now: str | None) -> None:
        response = requests.put(f"{stack_url}/_devstack/clock", json={"now": now}, timeout=TIMEOUT)
        assert response.status_code == 200, response.text

    yield move
    move(None)


def _top(stack_url: str, board: str, period: str | None = None) -> Any:
    params = {"period": period} if period else {}
    return requests.get(f"{stack_url}/boards/{board}/top", params=params, timeout=TIMEOUT)


def test_a_sunday_night_score_stays_in_the_old_week(stack_url: str, set_clock: Any) -> None:
    # Given a weekly board on the last millisecond of Sunday 2026-11-29 (ISO week 48)
    set_clock("2026-11-29T23:59:59.999Z")
    board = unique_id("weekly")
    created = _put(f"{stack_url}/boards/{board}", {"reset": "weekly", "shards": 2})
    assert (created["period"], created["retainPeriods"], created["reset"]) == ("2026-W48", 12, "weekly")
    for member in ("ana", "bo"):
        _put(f"{stack_url}/boards/{board}/members/{member}", {})

    # When ana scores then, and bo at 00:00:00 on Monday
    requests.post(f"{stack_url}/boards/{board}/members/ana/score", json={"value": 5}, timeout=TIMEOUT)
    set_clock("2026-11-30T00:00:00Z")
    requests.post(f"{stack_url}/boards/{board}/members/bo/score", json={"value": 7}, timeout=TIMEOUT)

    # Then ana's score is in week 48 and bo's in week 49
    assert [e["memberId"] for e in _top(stack_url, board, "2026-W48").json()["entries"]] == ["ana"]
    assert [e["memberId"] for e in _top(stack_url, board).json()["entries"]] == ["bo"]
    assert [e["memberId"] for e in _top(stack_url, board, "previous").json()["entries"]] == ["ana"]
    assert requests.get(f"{stack_url}/boards/{board}", timeout=TIMEOUT).json()["period"] == "2026-W49"
    # And ana is not ranked this week; each period has its own total
    assert requests.get(f"{stack_url}/boards/{board}/members/ana/rank", timeout=TIMEOUT).status_code == 404
    ranked = requests.get(f"{stack_url}/boards/{board}/members/ana/rank?period=previous", timeout=TIMEOUT)
    assert ranked.json()["rank"] == 1
    eventually(lambda: _assert_total(stack_url, board, "2026-W48", 1))


def _assert_total(stack_url: str, board: str, period: str, expected: int) -> None:
    assert _top(stack_url, board, period).json()["total"] == expected


@pytest.mark.parametrize(
    ("reset", "before", "after", "old", "new"),
    [
        ("monthly", "2027-01-31T23:59:59.999Z", "2027-02-01T00:00:00Z", "2027-01", "2027-02"),
        ("daily", "2028-02-28T23:59:59.999Z", "2028-02-29T00:00:00Z", "2028-02-28", "2028-02-29"),
        ("daily", "2028-02-29T23:59:59.999Z", "2028-03-01T00:00:00Z", "2028-02-29", "2028-03-01"),
    ],
)
def test_month_ends_and_leap_days(
    stack_url: str, set_clock: Any, reset: str, before: str, after: str, old: str, new: str
) -> None:
    set_clock(before)
    board = unique_id(reset)
    _put(f"{stack_url}/boards/{board}", {"reset": reset})
    _put(f"{stack_url}/boards/{board}/members/ana", {"score": 9})
    set_clock(after)
    _put(f"{stack_url}/boards/{board}/members/ana", {"score": 4})

    assert [(e["memberId"], e["score"]) for e in _top(stack_url, board, old).json()["entries"]] == [
        ("ana", 9)
    ]
    assert [(e["memberId"], e["score"]) for e in _top(stack_url, board, new).json()["entries"]] == [
        ("ana", 4)
    ]


def test_a_period_past_retain_periods_is_gone(stack_url: str, set_clock: Any) -> None:
    # Given a daily board that keeps 1 past period, with a score on 2026-12-10
    set_clock("2026-12-10T12:00:00Z")
    board = unique_id("retain")
    _put(f"{stack_url}/boards/{board}", {"reset": "daily", "retainPeriods": 1})
    _put(f"{stack_url}/boards/{board}/members/ana", {"score": 1})

    # When it is the 11th the 10th is the previous period; on the 12th it is gone
    set_clock("2026-12-11T12:00:00Z")
    assert _top(stack_url, board, "2026-12-10").status_code == 200
    set_clock("2026-12-12T00:00:00Z")
    gone = _top(stack_url, board, "2026-12-10")
    assert gone.status_code == 404
    assert gone.json()["code"] == "NotFound"
    # And other kinds of id, malformed or future ones are refused
    for bad in ("2026-W50", "2026-12", "2026-12-32", "2026-12-13"):
        response = _top(stack_url, board, bad)
        assert response.status_code == 400, bad
        assert "period" in response.json()["message"]
