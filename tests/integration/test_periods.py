"""Time-windowed boards on DynamoDB Local, with an injected clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from podium.dal import Database
from podium.errors import NotFound, ValidationError
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import unique_id

pytestmark = pytest.mark.integration


class SettableClock:
    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _service(store: Database, clock: SettableClock) -> Services:
    return Services(store, clock=clock)


def _board(service: Services, **settings: Any) -> str:
    board = unique_id("weekly")
    service.boards.put_board(board, board_request({"shards": Decimal(2), **settings}))
    return board


def test_a_score_lands_in_the_week_of_its_clock(store: Database) -> None:
    # Given a weekly board, and the last millisecond of Sunday 2026-11-22 (ISO week 47)
    clock = SettableClock(at("2026-11-22T23:59:59.999"))
    service = _service(store, clock)
    board = _board(service, reset="weekly")
    service.members.put_member(board, "ana", member_request({}))
    service.members.put_member(board, "bo", member_request({}))

    # When ana scores at 23:59:59.999 and bo at 00:00:00 on Monday
    first = service.members.submit_score(board, "ana", Decimal(5))
    clock.moment = at("2026-11-23T00:00:00")
    second = service.members.submit_score(board, "bo", Decimal(7))
    assert second.previous_score is None

    # Then ana's score is in the old week and bo's in the new one
    assert (first.score, first.previous_score) == (Decimal(5), None)
    assert [e.member_id for e in service.reads.top(board, 10, None, False, "2026-W47").entries] == ["ana"]
    assert [e.member_id for e in service.reads.top(board, 10, None, False).entries] == ["bo"]
    assert [e.member_id for e in service.reads.top(board, 10, None, False, "previous").entries] == ["ana"]
    assert service.reads.rank(board, "ana", "previous")["rank"] == 1
    # And a member with no score in a period is not ranked there
    with pytest.raises(NotFound, match="no score in period 2026-W48"):
        service.reads.rank(board, "ana")
    assert service.members.get_member(board, "ana").score is None
    assert service.members.get_member(board, "ana", "2026-W47").score == 5
    # And members and their data belong to the board, not to a period
    assert service.reads.ranks(board, ["ana", "bo"]) == service.reads.ranks(board, ["bo"])


@pytest.mark.parametrize(
    ("reset", "before", "after", "old", "new"),
    [
        ("monthly", "2026-01-31T23:59:59.999", "2026-02-01T00:00:00", "2026-01", "2026-02"),
        ("daily", "2024-02-28T23:59:59.999", "2024-02-29T00:00:00", "2024-02-28", "2024-02-29"),
        ("daily", "2024-02-29T23:59:59.999", "2024-03-01T00:00:00", "2024-02-29", "2024-03-01"),
    ],
)
def test_month_ends_and_leap_days(
    store: Database, reset: str, before: str, after: str, old: str, new: str
) -> None:
    clock = SettableClock(at(before))
    service = _service(store, clock)
    board = _board(service, reset=reset, operator="best")
    service.members.put_member(
        board, "ana", member_request({"score": Decimal("9.5")})
    )  # to the current period
    clock.moment = at(after)
    service.members.submit_score(board, "ana", Decimal(3))

    assert service.members.get_member(board, "ana", old).score == Decimal("9.5")
    assert service.members.get_member(board, "ana", new).score == Decimal(3)  # a new period starts afresh
    assert service.boards.get_board(board).to_json()["period"] != ""


def test_periods_past_retain_are_gone_and_bad_ids_refused(store: Database) -> None:
    # Given a daily board that keeps 2 past periods, with a score on 2026-11-20
    clock = SettableClock(at("2026-11-20T12:00:00"))
    service = _service(store, clock)
    board = _board(service, reset="daily", retainPeriods=Decimal(2))
    service.members.put_member(board, "ana", member_request({"score": Decimal(1)}))

    # When the clock reaches the 22nd, the 20th is the oldest kept period
    clock.moment = at("2026-11-22T08:00:00")
    assert [e.member_id for e in service.reads.top(board, 5, None, False, "2026-11-20").entries] == ["ana"]

    # And on the 23rd it is gone: 404
    clock.moment += timedelta(days=1)
    with pytest.raises(NotFound, match="gone"):
        service.reads.top(board, 5, None, False, "2026-11-20")
    # And the score item carries the TTL that lets DynamoDB remove it then
    item = store.tables.client.get_item(
        TableName=store.tables.table, Key={"pk": {"S": f"M#{board}#ana"}, "sk": {"S": "SCORE#2026-11-20"}}
    )["Item"]
    assert int(item["ttl"]["N"]) == int(at("2026-11-23T00:00:00").timestamp())
    # And ids of another kind, malformed or in the future are refused
    for bad in ("2026-W47", "2026-11", "2026-11-31", "2026-11-24", "tomorrow"):
        with pytest.raises(ValidationError, match="period"):
            service.reads.top(board, 5, None, False, bad)
