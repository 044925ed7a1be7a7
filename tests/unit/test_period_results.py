"""The pure decisions of announcing a period's results (podium.results): which periods are
due, who is told at the cut, and what the messages say; each against a plain model."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from podium.dal.results import Announcement, ResultsBoard
from podium.dal.schema import NOTHING_ANNOUNCED
from podium.errors import ValidationError
from podium.models import Board, BoardPolicy, BoardSettings, RankedEntry
from podium.results import (
    GRACE,
    announcement_id,
    closed_message,
    due_periods,
    result_notification,
    within_cut,
)
from podium.validation import board_request
from tests.helpers import expected_listing

START = datetime(2026, 1, 1, tzinfo=UTC)


def _board(reset: str, created: datetime, retain: int = 12, through: str = NOTHING_ANNOUNCED) -> ResultsBoard:
    return ResultsBoard("b", reset, retain, created, 100, through)


def _model_periods(reset: str, upto: datetime) -> list[tuple[str, datetime, datetime]]:
    """Every period from 2025 on, with its start and end, computed day by day with date
    arithmetic of its own (not podium.periods)."""
    found: dict[str, tuple[datetime, datetime]] = {}
    day = date(2025, 1, 1)
    while datetime(day.year, day.month, day.day, tzinfo=UTC) <= upto:
        if reset == "daily":
            ident, first, last = day.isoformat(), day, day + timedelta(days=1)
        elif reset == "weekly":
            year, week, weekday = day.isocalendar()
            first = day - timedelta(days=weekday - 1)
            ident, last = f"{year}-W{week:02d}", first + timedelta(days=7)
        else:
            first = day.replace(day=1)
            last = (first + timedelta(days=32)).replace(day=1)
            ident = f"{day.year}-{day.month:02d}"
        found[ident] = (
            datetime(first.year, first.month, first.day, tzinfo=UTC),
            datetime(last.year, last.month, last.day, tzinfo=UTC),
        )
        day += timedelta(days=1)
    return sorted(((p, s, e) for p, (s, e) in found.items()), key=lambda x: x[1])


@pytest.mark.parametrize("reset", ["daily", "weekly", "monthly"])
def test_due_periods_match_a_model_of_the_rules(reset: str) -> None:
    rng = random.Random(f"due-{reset}")
    for _ in range(200):
        # Given a board created at some moment, a last period announced (or none yet), and
        # a time now
        created = START + timedelta(minutes=rng.randrange(0, 400 * 24 * 60))
        now = created + timedelta(minutes=rng.randrange(0, 200 * 24 * 60))
        retain = rng.choice([1, 2, 5, 12])
        every = _model_periods(reset, now)
        through = rng.choice([NOTHING_ANNOUNCED, *[p for p, _, _ in every[-20:]]])

        # When the due periods are computed
        due = due_periods(_board(reset, created, retain, through), now)

        # Then they are the model's: ended GRACE ago, readable (one of the `retain` before
        # the current one), ended after creation, after the last one announced
        current = next(i for i, (_, s, e) in enumerate(every) if s <= now < e)
        readable = every[max(0, current - retain) : current]
        done = {p for p, _, _ in every if through != NOTHING_ANNOUNCED and p <= through}
        expected = [p for p, _, end in readable if end + GRACE <= now and end > created and p not in done]
        assert due == expected


def test_a_board_created_mid_week_announces_that_week_and_not_the_one_before() -> None:
    created = datetime(2026, 11, 25, 12, tzinfo=UTC)  # a Wednesday of 2026-W48
    board = _board("weekly", created, through=NOTHING_ANNOUNCED)
    # Just after the boundary: not yet (the grace period), then that week only
    monday = datetime(2026, 11, 30, tzinfo=UTC)
    assert due_periods(board, monday + timedelta(seconds=30)) == []
    assert due_periods(board, monday + GRACE) == ["2026-W48"]
    # A job down for three weeks announces each week once, oldest first; announced ones are not due
    later = monday + timedelta(weeks=3, hours=1)
    assert due_periods(board, later) == ["2026-W48", "2026-W49", "2026-W50", "2026-W51"]
    assert due_periods(_board("weekly", created, through="2026-W49"), later) == ["2026-W50", "2026-W51"]


def _listing(scores: dict[str, Decimal]) -> list[RankedEntry]:
    return [RankedEntry(rank, member, score) for rank, member, score in expected_listing(scores)]


def test_the_cut_tells_everyone_ranked_announce_top_or_better_ties_whole() -> None:
    rng = random.Random("cut")
    for _ in range(300):
        scores = {f"m{i:03d}": Decimal(rng.randrange(0, 8)) for i in range(rng.randrange(0, 40))}
        listing = _listing(scores)
        top = rng.randrange(0, 45)
        # the model: every member with fewer than `top` members strictly better
        expected = {m for m, s in scores.items() if sum(1 for o in scores.values() if o > s) < top}
        told = within_cut(listing, top)
        assert {e.member_id for e in told} == expected
        assert told == listing[: len(told)]  # a prefix of the listing, in its order


def test_a_tie_at_the_cut_is_told_whole_and_zero_tells_no_one() -> None:
    listing = _listing({"ana": Decimal(9), "bo": Decimal(7), "cy": Decimal(7), "dee": Decimal(1)})
    assert [(e.rank, e.member_id) for e in within_cut(listing, 2)] == [(1, "ana"), (2, "bo"), (2, "cy")]
    assert within_cut(listing, 0) == []


def _announcement() -> Announcement:
    entries = _listing({"ana": Decimal("950"), "bo": Decimal("0.1"), "cy": Decimal("12345678901234567890.5")})
    return Announcement(
        board_id="weekly-cup",
        period="2026-W47",
        run="r1",
        announced_us=1_764_547_200_000_000,
        member_count=3,
        entries=entries,
        listed=3,
        parts=1,
    )


def test_the_period_closed_message_carries_the_final_top_and_member_count() -> None:
    a = _announcement()
    body, attributes = closed_message(a)
    assert body == {
        "type": "periodClosed",
        "announcementId": announcement_id("weekly-cup", "2026-W47"),
        "boardId": "weekly-cup",
        "period": "2026-W47",
        "memberCount": 3,
        "entries": [
            {"rank": 1, "memberId": "cy", "score": Decimal("12345678901234567890.5")},
            {"rank": 2, "memberId": "ana", "score": Decimal("950")},
            {"rank": 3, "memberId": "bo", "score": Decimal("0.1")},
        ],
    }
    assert attributes == {
        "type": "periodClosed",
        "boardId": "weekly-cup",
        "announcementId": body["announcementId"],
    }
    # the same for every run, different for another period or board
    assert announcement_id("weekly-cup", "2026-W47") != announcement_id("weekly-cup", "2026-W48")


def test_a_period_result_names_period_rank_and_score_with_an_id_of_its_own() -> None:
    a = _announcement()
    told = result_notification(a, a.entries[1])
    assert told.to_json() == {
        "id": told.notification_id,
        "type": "periodResult",
        "boardId": "weekly-cup",
        "memberId": "ana",
        "period": "2026-W47",
        "rank": 2,
        "score": Decimal("950"),
        "createdAt": "2025-12-01T00:00:00Z",
    }
    # deterministic: another run tells the same notification; another member another one
    assert result_notification(a, a.entries[1]) == told
    assert result_notification(a, a.entries[0]).notification_id != told.notification_id


OUT_OF_RANGE = "announceTop must be an integer from 0 to 10000"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"announceTop": 5}, "announceTop is a setting of boards that reset"),
        ({"reset": "never", "announceTop": 0}, "announceTop is a setting of boards that reset"),
        ({"reset": "weekly", "announceTop": 10_001}, OUT_OF_RANGE),
        ({"reset": "weekly", "announceTop": -1}, OUT_OF_RANGE),
        (
            {"reset": "weekly", "announceTop": Decimal("2.5")},
            "announceTop must be an integer from 0 to 10000",
        ),
        ({"reset": "weekly", "announceTop": True}, OUT_OF_RANGE),
    ],
)
def test_announce_top_is_refused_naming_the_field_and_its_limit(body: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        board_request(body)


def test_announce_top_kept_when_left_out_and_shown_on_time_windowed_boards_only() -> None:
    # Given a weekly board's policy with announceTop 7
    given = board_request({"reset": "weekly", "announceTop": Decimal(7)}).policy(BoardPolicy())
    assert given.announce_top == 7
    # When a PUT leaves it out, it keeps its value; a new board starts at 100
    assert board_request({"reset": "weekly", "title": "t"}).policy(given).announce_top == 7
    assert board_request({"reset": "daily"}).policy(BoardPolicy()).announce_top == 100
    # And the representation shows it on a board that resets, not on one that never does
    created = datetime(2026, 11, 25, tzinfo=UTC)
    weekly = Board("w", BoardSettings(reset="weekly"), None, created, period="2026-W48", policy=given)
    never = Board("n", BoardSettings(), None, created)
    assert weekly.to_json()["announceTop"] == 7
    assert "announceTop" not in never.to_json()
