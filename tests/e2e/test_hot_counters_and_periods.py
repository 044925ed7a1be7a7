"""Hot counters and time, end to end over HTTP against the local stack: the event log
under load, fresh reads, period boundaries with an injected clock, expiry."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pytest
import requests

from podium_client import Event, NotFound, PodiumClient, ValidationError
from tests.helpers import eventually, unique_id

pytestmark = pytest.mark.e2e

TIMEOUT = 60


def _log(podium: PodiumClient, board: str, events: list[Event], assign_ids: bool = True) -> None:
    assert podium.log_events(board, events, assign_ids=assign_ids) == len(events)


# Events enough that the 16 clients overlap and that an event and its second copy are
# mostly folded in different batches of the fold (1,000 records a batch): 7,500 inserts.
# 20,000 (30,000 inserts) proved nothing more and took 2.5 minutes of the shared stack.
VIEWS = 5_000


def test_5000_events_from_16_clients_half_sent_twice_count_once(podium: PodiumClient) -> None:
    # Given a viral image, and 5,000 distinct views of which half are sent twice
    board = unique_id("viral")
    podium.create_board(board)
    podium.put_member(board, "img-006.jpg")
    views = [Event("img-006.jpg", 1, f"v-{i}") for i in range(VIEWS)]
    sends = views + views[::2]
    random.Random(7).shuffle(sends)
    requests_ = [sends[i : i + 100] for i in range(0, len(sends), 100)]
    assert len(requests_) > 16 * 4  # every client sends several requests, all at once

    # When 16 clients send them at once (one client's connection pool, shared by 16 threads)
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda chunk: _log(podium, board, chunk), requests_))

    # Then the folded score is the number of distinct events, exactly, and nothing is pending
    def folded() -> None:
        assert podium.get_member(board, "img-006.jpg").score == VIEWS

    eventually(folded, timeout=300, interval=1.0)
    fresh = podium.get_member(board, "img-006.jpg", fresh=True)
    assert (fresh.score, fresh.pending_events) == (Decimal(VIEWS), 0)


def _pause_aggregator(stack_url: str, paused: bool) -> None:
    """The fold waits (the aggregator stops reading its stream) or goes on."""
    response = requests.put(
        f"{stack_url}/_devstack/streams/AggregatorFunction", json={"paused": paused}, timeout=TIMEOUT
    )
    assert response.status_code == 200, response.text


def test_a_fresh_read_is_the_true_total_before_the_fold(podium: PodiumClient, stack_url: str) -> None:
    # Given an image with 5 views
    board = unique_id("fresh")
    podium.create_board(board)
    podium.put_member(board, "img-1", score=5)

    # When 250 views (some with ids, one id repeated, some decimal and sent without an id)
    # are logged while the fold waits (the stream's consumer falls behind)
    events = [Event("img-1", 1, f"e-{i}") for i in range(200)]
    events += [Event("img-1", Decimal("0.5")) for _ in range(49)]
    events.append(Event("img-1", 1, "e-0"))
    _pause_aggregator(stack_url, True)
    try:
        for start in range(0, len(events), 100):
            _log(podium, board, events[start : start + 100], assign_ids=False)
        first = podium.get_member(board, "img-1", fresh=True)
        plain = podium.get_member(board, "img-1").score
    finally:
        _pause_aggregator(stack_url, False)

    # Then the fresh read is the true total at once, while the fold has work left
    assert first.score == Decimal("229.5")
    assert first.pending_events is not None
    assert first.pending_events > 0
    assert plain is not None
    assert plain < Decimal("229.5")

    # And once folded, the plain read agrees and nothing is pending
    def folded() -> None:
        member = podium.get_member(board, "img-1", fresh=True)
        assert (member.score, member.pending_events) == (Decimal("229.5"), 0)
        assert podium.get_member(board, "img-1").score == Decimal("229.5")

    eventually(folded, timeout=60)


def test_events_for_unknown_members_are_dropped_and_counted(podium: PodiumClient) -> None:
    board = unique_id("dropped")
    podium.create_board(board)
    _log(podium, board, [Event("nobody", 1), Event("nobody", 2)])

    def counted() -> None:
        assert podium.get_board(board).dropped_events == 2

    eventually(counted)
    with pytest.raises(NotFound):
        podium.get_member(board, "nobody")


def test_only_increment_boards_take_events_and_requests_are_checked_whole(stack_url: str) -> None:
    board = unique_id("best")
    requests.put(f"{stack_url}/boards/{board}", json={"operator": "best"}, timeout=TIMEOUT).raise_for_status()
    refused = requests.post(
        f"{stack_url}/boards/{board}/events",
        json={"events": [{"memberId": "a", "value": 1}]},
        timeout=TIMEOUT,
    )
    assert refused.status_code == 400
    assert "increment" in refused.json()["message"]
    other = unique_id("inc")
    requests.put(f"{stack_url}/boards/{other}", json={}, timeout=TIMEOUT).raise_for_status()
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


def _members(podium: PodiumClient, board: str, period: str | None = None) -> list[str]:
    return [e.member_id for e in podium.top(board, period=period).entries]


def test_a_sunday_night_score_stays_in_the_old_week(podium: PodiumClient, set_clock: Any) -> None:
    # Given a weekly board on the last millisecond of Sunday 2026-11-29 (ISO week 48)
    set_clock("2026-11-29T23:59:59.999Z")
    board = unique_id("weekly")
    created = podium.create_board(board, reset="weekly", shards=2)
    assert (created.period, created.retain_periods, created.reset) == ("2026-W48", 12, "weekly")
    for member in ("ana", "bo"):
        podium.put_member(board, member)

    # When ana scores then, and bo at 00:00:00 on Monday
    podium.submit_score(board, "ana", 5)
    set_clock("2026-11-30T00:00:00Z")
    podium.submit_score(board, "bo", 7)

    # Then ana's score is in week 48 and bo's in week 49
    assert _members(podium, board, "2026-W48") == ["ana"]
    assert _members(podium, board) == ["bo"]
    assert _members(podium, board, "previous") == ["ana"]
    assert podium.get_board(board).period == "2026-W49"
    # And ana is not ranked this week; each period has its own total
    with pytest.raises(NotFound):
        podium.rank(board, "ana")
    assert podium.rank(board, "ana", period="previous").rank == 1
    eventually(lambda: _assert_total(podium, board, "2026-W48", 1))


def _assert_total(podium: PodiumClient, board: str, period: str, expected: int) -> None:
    assert podium.top(board, period=period).total == expected


@pytest.mark.parametrize(
    ("reset", "before", "after", "old", "new"),
    [
        ("monthly", "2027-01-31T23:59:59.999Z", "2027-02-01T00:00:00Z", "2027-01", "2027-02"),
        ("daily", "2028-02-28T23:59:59.999Z", "2028-02-29T00:00:00Z", "2028-02-28", "2028-02-29"),
        ("daily", "2028-02-29T23:59:59.999Z", "2028-03-01T00:00:00Z", "2028-02-29", "2028-03-01"),
    ],
)
def test_month_ends_and_leap_days(
    podium: PodiumClient, set_clock: Any, reset: str, before: str, after: str, old: str, new: str
) -> None:
    set_clock(before)
    board = unique_id(reset)
    podium.create_board(board, reset=reset)
    podium.put_member(board, "ana", score=9)
    set_clock(after)
    podium.put_member(board, "ana", score=4)

    assert [(e.member_id, e.score) for e in podium.top(board, period=old).entries] == [("ana", Decimal(9))]
    assert [(e.member_id, e.score) for e in podium.top(board, period=new).entries] == [("ana", Decimal(4))]


def test_a_period_past_retain_periods_is_gone(podium: PodiumClient, set_clock: Any) -> None:
    # Given a daily board that keeps 1 past period, with a score on 2026-12-10
    set_clock("2026-12-10T12:00:00Z")
    board = unique_id("retain")
    podium.create_board(board, reset="daily", retain_periods=1)
    podium.put_member(board, "ana", score=1)

    # When it is the 11th the 10th is the previous period; on the 12th it is gone
    set_clock("2026-12-11T12:00:00Z")
    assert podium.top(board, period="2026-12-10").entries
    set_clock("2026-12-12T00:00:00Z")
    with pytest.raises(NotFound) as gone:
        podium.top(board, period="2026-12-10")
    assert (gone.value.status, gone.value.code) == (404, "NotFound")
    # And other kinds of id, malformed or future ones are refused
    for bad in ("2026-W50", "2026-12", "2026-12-32", "2026-12-13"):
        with pytest.raises(ValidationError) as refused:
            podium.top(board, period=bad)
        assert refused.value.status == 400, bad
        assert "period" in refused.value.message
