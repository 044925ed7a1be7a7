"""Time-windowed boards: periods are computed from the clock, never switched by a job.

A board with ``reset: daily | weekly | monthly`` keeps one ranking per period; the
current period is whatever the clock says now, so a reset cannot misfire or come late.
Period ids: ``2026-11-22`` (daily), ``2026-W47`` (ISO weeks, Monday 00:00 UTC),
``2026-11`` (monthly). A board that never resets has the one period ``all``.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from podium.errors import NotFound, ValidationError

ALL_TIME = "all"  # the period of a board that never resets

PATTERNS = {
    "daily": re.compile(r"(\d{4})-(\d{2})-(\d{2})"),
    "weekly": re.compile(r"(\d{4})-W(\d{2})"),
    "monthly": re.compile(r"(\d{4})-(\d{2})"),
}
EXAMPLES = {"daily": "2026-11-22", "weekly": "2026-W47", "monthly": "2026-11"}


def period_of(reset: str, moment: datetime) -> str:
    """The id of the period that ``moment`` falls in."""
    if reset == "never":
        return ALL_TIME
    day = moment.astimezone(UTC).date()
    if reset == "daily":
        return day.isoformat()
    if reset == "weekly":
        year, week, _ = day.isocalendar()
        return f"{year}-W{week:02d}"
    return f"{day.year}-{day.month:02d}"


def start_of(reset: str, period: str) -> datetime:
    """The first instant of a period (UTC)."""
    if reset == "daily":
        day = date.fromisoformat(period)
    elif reset == "weekly":
        year, week = (int(part) for part in PATTERNS["weekly"].fullmatch(period).groups())  # type: ignore[union-attr]
        day = date.fromisocalendar(year, week, 1)
    else:
        year, month = (int(part) for part in period.split("-"))
        day = date(year, month, 1)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def shift(reset: str, period: str, steps: int) -> str:
    """The period ``steps`` periods after (negative: before) ``period``."""
    start = start_of(reset, period)
    if reset == "daily":
        return period_of(reset, start + timedelta(days=steps))
    if reset == "weekly":
        return period_of(reset, start + timedelta(weeks=steps))
    months = start.year * 12 + (start.month - 1) + steps
    return f"{months // 12}-{months % 12 + 1:02d}"


def end_of(reset: str, period: str) -> datetime:
    return start_of(reset, shift(reset, period, 1))


def expires_at(reset: str, period: str, retain: int) -> int:
    """When a period's items may go (epoch seconds): once ``retain`` newer periods have
    ended after it, it is no longer readable, and its TTL lets DynamoDB remove it."""
    return int(end_of(reset, shift(reset, period, retain)).timestamp())


def resolve(reset: str, requested: str | None, now: datetime, retain: int) -> str:
    """The period a read asks for: ``current`` (default), ``previous`` or a period id.

    A malformed id, one of another kind or a future one is a 400; one older than the
    ``retain`` periods kept besides the current one is a 404.
    """
    current = period_of(reset, now)
    if requested is None or requested == "current":
        return current
    if reset == "never":
        if requested in (ALL_TIME, "previous"):
            raise ValidationError("period: this board never resets; use period=current or leave it out")
        raise ValidationError("period must be current on a board that never resets")
    if requested == "previous":
        period = shift(reset, current, -1)
    else:
        if not PATTERNS[reset].fullmatch(requested) or not _valid(reset, requested):
            raise ValidationError(
                f"period must be current, previous or a {reset} period id like {EXAMPLES[reset]}"
            )
        period = requested
        if start_of(reset, period) > start_of(reset, current):
            raise ValidationError(f"period {period} is in the future")
    if start_of(reset, period) < start_of(reset, shift(reset, current, -retain)):
        raise NotFound(f"period {period} is gone: this board keeps {retain} past periods")
    return period


def _valid(reset: str, period: str) -> bool:
    try:
        return period_of(reset, start_of(reset, period)) == period
    except ValueError:
        return False
