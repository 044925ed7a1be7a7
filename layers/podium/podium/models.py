"""Typed models that the domain takes and returns, and their JSON representations."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from podium import clock, periods
from podium.keys import RankOrder

ORDERS = ("desc", "asc")
OPERATORS = ("increment", "best", "set")
TIE_BREAKS = ("shared", "earliest")
RESETS = ("never", "daily", "weekly", "monthly")
DEFAULT_SHARDS = 10
MAX_SHARDS = 100


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class BoardSettings:
    """The settings fixed at a board's creation; a re-creation must repeat them exactly."""

    order: str = "desc"
    operator: str = "increment"
    tie_break: str = "shared"
    shards: int = DEFAULT_SHARDS
    reset: str = "never"
    retain_periods: int = 12
    rollup_to: tuple[str, ...] = ()

    @property
    def rank_order(self) -> RankOrder:
        return RankOrder(descending=self.order == "desc", earliest=self.tie_break == "earliest")

    def is_better(self, a: Decimal, b: Decimal) -> bool:
        """Is score ``a`` strictly better than ``b`` under this board's order?"""
        return a > b if self.order == "desc" else a < b

    def differences(self, other: BoardSettings) -> list[str]:
        names = {
            "order": "order",
            "operator": "operator",
            "tie_break": "tieBreak",
            "shards": "shards",
            "reset": "reset",
            "retain_periods": "retainPeriods",
            "rollup_to": "rollupTo",
        }
        return [api for attr, api in names.items() if getattr(self, attr) != getattr(other, attr)]


@dataclass(frozen=True)
class Board:
    board_id: str
    settings: BoardSettings
    title: str | None
    created_at: datetime
    member_count: int = 0
    dropped_events: int = 0

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "boardId": self.board_id,
            "order": self.settings.order,
            "operator": self.settings.operator,
            "tieBreak": self.settings.tie_break,
            "shards": self.settings.shards,
            "title": self.title,
            "memberCount": self.member_count,
            "createdAt": iso(self.created_at),
        }
        if self.settings.reset != "never":
            body["reset"] = self.settings.reset
            body["period"] = periods.period_of(self.settings.reset, clock.now())
            body["retainPeriods"] = self.settings.retain_periods
        if self.settings.rollup_to:
            body["rollupTo"] = list(self.settings.rollup_to)
        if self.dropped_events:
            body["droppedEvents"] = self.dropped_events
        return body


@dataclass(frozen=True)
class ScoreState:
    """What the score item holds: small, and apart from the member's data."""

    score: Decimal
    version: int
    reached_at_us: int


@dataclass(frozen=True)
class Member:
    board_id: str
    member_id: str
    score: Decimal | None  # None: no score in the period read (time-windowed boards)
    data: dict[str, Any]
    created_at: datetime
    updated_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "boardId": self.board_id,
            "memberId": self.member_id,
            "score": self.score,
            "data": self.data,
            "createdAt": iso(self.created_at),
            "updatedAt": iso(self.updated_at),
        }


@dataclass(frozen=True)
class IndexEntry:
    """One entry of the ranking index, decoded from its sort key."""

    sort_key: str
    member_id: str
    score: Decimal


@dataclass(frozen=True)
class RankedEntry:
    rank: int
    member_id: str
    score: Decimal
    data: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"rank": self.rank, "memberId": self.member_id, "score": self.score}
        if self.data is not None:
            body["data"] = self.data
        return body


@dataclass(frozen=True)
class Page:
    entries: list[RankedEntry]
    total: int
    next_cursor: str | None = None


@dataclass(frozen=True)
class Snapshot:
    """A board's top 100 and memberCount as the scheduled job recorded them at ``taken_at``
    (the scheduled time of the run, so a retried run names the same snapshot)."""

    board_id: str
    snapshot_id: str
    taken_at: datetime
    member_count: int
    entries: list[RankedEntry]

    def to_json(self) -> dict[str, Any]:
        return {
            "snapshotId": self.snapshot_id,
            "takenAt": iso(self.taken_at),
            "memberCount": self.member_count,
            "entries": [entry.to_json() for entry in self.entries],
        }


@dataclass(frozen=True)
class ScoreChange:
    member_id: str
    score: Decimal
    previous_score: Decimal | None  # None: the first score of a period

    def to_json(self) -> dict[str, Any]:
        return {"memberId": self.member_id, "score": self.score, "previousScore": self.previous_score}


@dataclass
class BoardList:
    boards: list[Board] = field(default_factory=list)
    next_cursor: str | None = None


@dataclass(frozen=True)
class Notification:
    """One entry of a member's inbox; its id is derived from the stream record that caused
    it, so a record delivered twice yields the same notification, stored once."""

    notification_id: str
    type: str
    board_id: str
    member_id: str
    by_member_id: str
    score: Decimal
    by_score: Decimal
    created_us: int

    @property
    def created_at(self) -> datetime:
        return datetime.fromtimestamp(self.created_us / 1_000_000, tz=UTC)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.notification_id,
            "type": self.type,
            "boardId": self.board_id,
            "memberId": self.member_id,
            "byMemberId": self.by_member_id,
            "score": self.score,
            "byScore": self.by_score,
            "createdAt": iso(self.created_at),
        }


@dataclass(frozen=True)
class LoggedEvent:
    """One event of the insert-only log of a hot counter (see podium.events)."""

    board_id: str
    member_id: str
    period: str
    key: str  # the item's sort key: "i:{eventId}" for a client id, "g:{uuid}" otherwise
    value: Decimal
    insertion: str  # unique per insert: tells a redelivery from a later re-send
    event_id: str | None = None
    fold: str | None = None
