"""Period ids, boundaries and retention, computed from the clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from podium import periods
from podium.errors import NotFound, ValidationError


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("reset", "moment", "period"),
    [
        ("weekly", "2026-11-22T23:59:59.999", "2026-W47"),  # a Sunday: still the old ISO week
        ("weekly", "2026-11-23T00:00:00", "2026-W48"),  # Monday 00:00 UTC: the new week
        ("weekly", "2027-01-01T12:00:00", "2026-W53"),  # ISO year != calendar year
        ("weekly", "2024-12-30T00:00:00", "2025-W01"),
        ("daily", "2024-02-29T23:59:59.999", "2024-02-29"),  # a leap day
        ("daily", "2024-03-01T00:00:00", "2024-03-01"),
        ("monthly", "2026-01-31T23:59:59.999", "2026-01"),  # a month end
        ("monthly", "2026-02-01T00:00:00", "2026-02"),
        ("monthly", "2024-02-29T12:00:00", "2024-02"),
        ("never", "2026-11-22T10:00:00", "all"),
    ],
)
def test_a_moment_falls_in_its_period(reset: str, moment: str, period: str) -> None:
    assert periods.period_of(reset, at(moment)) == period


@pytest.mark.parametrize(
    ("reset", "period", "before", "after"),
    [
        ("daily", "2024-03-01", "2024-02-29", "2024-03-02"),
        ("weekly", "2026-W01", "2025-W52", "2026-W02"),
        ("monthly", "2026-01", "2025-12", "2026-02"),
    ],
)
def test_periods_shift(reset: str, period: str, before: str, after: str) -> None:
    assert periods.shift(reset, period, -1) == before
    assert periods.shift(reset, period, 1) == after
    assert periods.end_of(reset, before) == periods.start_of(reset, period)


def test_reads_resolve_current_previous_and_ids() -> None:
    now = at("2026-11-22T10:00:00")
    assert periods.resolve("weekly", None, now, 12) == "2026-W47"
    assert periods.resolve("weekly", "current", now, 12) == "2026-W47"
    assert periods.resolve("weekly", "previous", now, 12) == "2026-W46"
    assert periods.resolve("weekly", "2026-W35", now, 12) == "2026-W35"  # 12 back: still kept
    with pytest.raises(NotFound, match="keeps 12 past periods"):
        periods.resolve("weekly", "2026-W34", now, 12)
    with pytest.raises(ValidationError, match="future"):
        periods.resolve("weekly", "2026-W48", now, 12)
    with pytest.raises(ValidationError, match="weekly period id like 2026-W47"):
        periods.resolve("weekly", "2026-11-22", now, 12)  # a day on a weekly board
    for malformed in ("2026-W54", "2026-W7", "W47", "2026-13", "2026-02-30"):
        with pytest.raises(ValidationError, match="period"):
            periods.resolve("daily" if malformed.count("-") == 2 else "weekly", malformed, now, 12)
    with pytest.raises(ValidationError, match="never resets"):
        periods.resolve("never", "previous", now, 12)


def test_a_period_expires_once_retain_newer_periods_have_ended() -> None:
    # 2026-W46 with 1 period retained: readable during W47, gone from W48 on
    expiry = datetime.fromtimestamp(periods.expires_at("weekly", "2026-W46", 1), tz=UTC)
    assert expiry == at("2026-11-23T00:00:00")  # Monday of W48
    assert periods.resolve("weekly", "2026-W46", expiry - timedelta(microseconds=1), 1) == "2026-W46"
    with pytest.raises(NotFound):
        periods.resolve("weekly", "2026-W46", expiry, 1)
