"""What the API answers, as frozen dataclasses with exact Decimal scores.

Each ``from_json`` reads the body docs/openapi.yaml documents for it; fields the contract
marks optional are None when absent. Lists are tuples, so a result cannot change under
the code that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from podium_client.codec import optional_score, score
from podium_client.resharding import ReshardProgress


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class Limits:
    """A board's ``limits``; every bound None means no limits (``Limits()`` sends ``{}``,
    which removes them)."""

    min_value: Decimal | None = None
    max_value: Decimal | None = None
    max_submissions_per_minute: int | None = None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Limits:
        return cls(
            optional_score(body.get("minValue")),
            optional_score(body.get("maxValue")),
            _optional_int(body.get("maxSubmissionsPerMinute")),
        )

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.min_value is not None:
            body["minValue"] = self.min_value
        if self.max_value is not None:
            body["maxValue"] = self.max_value
        if self.max_submissions_per_minute is not None:
            body["maxSubmissionsPerMinute"] = self.max_submissions_per_minute
        return body


@dataclass(frozen=True)
class Board:
    """A board's settings and counts. ``created`` is True only on the answer of the
    request that created it (201); it takes no part in comparisons."""

    board_id: str
    order: str
    operator: str
    tie_break: str
    shards: int
    title: str | None
    member_count: int
    client_writes: bool
    public_read: bool
    created_at: datetime
    limits: Limits = field(default_factory=Limits)
    reset: str = "never"
    period: str | None = None  # a time-windowed board's current period
    retain_periods: int | None = None  # a time-windowed board's only
    announce_top: int | None = None
    rollup_to: tuple[str, ...] = ()
    dropped_events: int = 0
    reshard: ReshardProgress | None = None  # a move to another shard count, while it runs
    created: bool = field(default=False, compare=False)

    @classmethod
    def from_json(cls, body: dict[str, Any], created: bool = False) -> Board:
        return cls(
            board_id=body["boardId"],
            order=body["order"],
            operator=body["operator"],
            tie_break=body["tieBreak"],
            shards=int(body["shards"]),
            title=body.get("title"),
            member_count=int(body["memberCount"]),
            client_writes=bool(body["clientWrites"]),
            public_read=bool(body["publicRead"]),
            created_at=_moment(body["createdAt"]),
            limits=Limits.from_json(body.get("limits") or {}),
            reset=body.get("reset", "never"),
            period=body.get("period"),
            retain_periods=_optional_int(body.get("retainPeriods")),
            announce_top=_optional_int(body.get("announceTop")),
            rollup_to=tuple(body.get("rollupTo") or ()),
            dropped_events=int(body.get("droppedEvents", 0)),
            reshard=ReshardProgress.from_json(body["reshard"]) if body.get("reshard") else None,
            created=created,
        )

    def fixed_settings(self) -> dict[str, Any]:
        """The settings fixed at creation, as a ``PUT /boards/{boardId}`` body must repeat
        them (a fixed setting left out means its default, which may not be this board's)."""
        body: dict[str, Any] = {
            "order": self.order,
            "operator": self.operator,
            "tieBreak": self.tie_break,
            "shards": self.shards,
        }
        if self.reset != "never":
            body["reset"] = self.reset
            if self.retain_periods is not None:
                body["retainPeriods"] = self.retain_periods
        if self.rollup_to:
            body["rollupTo"] = list(self.rollup_to)
        return body


@dataclass(frozen=True)
class BoardPage:
    boards: tuple[Board, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> BoardPage:
        return cls(tuple(Board.from_json(b) for b in body["boards"]), body.get("nextCursor"))


@dataclass(frozen=True)
class Member:
    """A member: its score in the period read (None when it has none there), its data.
    ``pending_events`` is set on a ``fresh`` read only; ``created`` as on Board."""

    board_id: str
    member_id: str
    score: Decimal | None
    data: dict[str, Any]
    hidden: bool
    created_at: datetime
    updated_at: datetime
    pending_events: int | None = None
    created: bool = field(default=False, compare=False)

    @classmethod
    def from_json(cls, body: dict[str, Any], created: bool = False) -> Member:
        return cls(
            board_id=body["boardId"],
            member_id=body["memberId"],
            score=optional_score(body.get("score")),
            data=dict(body.get("data") or {}),
            hidden=bool(body.get("hidden", False)),
            created_at=_moment(body["createdAt"]),
            updated_at=_moment(body["updatedAt"]),
            pending_events=_optional_int(body.get("pendingEvents")),
            created=created,
        )


@dataclass(frozen=True)
class ScoreResult:
    """A submission's outcome: the score now and before (None: the first of a period)."""

    member_id: str
    score: Decimal
    previous_score: Decimal | None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> ScoreResult:
        return cls(body["memberId"], score(body["score"]), optional_score(body.get("previousScore")))


@dataclass(frozen=True)
class Entry:
    """One line of a ranked list; ``data`` only when asked for (``with_data``)."""

    rank: int
    member_id: str
    score: Decimal
    data: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Entry:
        data = body.get("data")
        return cls(int(body["rank"]), body["memberId"], score(body["score"]), data)


def _entries(body: dict[str, Any]) -> tuple[Entry, ...]:
    return tuple(Entry.from_json(e) for e in body["entries"])


@dataclass(frozen=True)
class TopPage:
    """A page of the listing. ``etag`` is the answer's ETag header when the service sent
    one: pass it as ``if_none_match`` to learn cheaply that nothing changed."""

    board_id: str
    entries: tuple[Entry, ...]
    total: int
    next_cursor: str | None
    etag: str | None = None

    @classmethod
    def from_json(cls, body: dict[str, Any], etag: str | None = None) -> TopPage:
        return cls(body["boardId"], _entries(body), int(body["total"]), body.get("nextCursor"), etag)


@dataclass(frozen=True)
class NotModified:
    """``top`` with ``if_none_match`` when the service answered 304: the page the caller
    holds is still the page."""

    etag: str | None


@dataclass(frozen=True)
class Rank:
    member_id: str
    score: Decimal
    rank: int
    total: int
    top_percent: Decimal

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Rank:
        rank, total = int(body["rank"]), int(body["total"])
        return cls(body["memberId"], score(body["score"]), rank, total, score(body["topPercent"]))


@dataclass(frozen=True)
class AroundPage:
    board_id: str
    entries: tuple[Entry, ...]
    total: int

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> AroundPage:
        return cls(body["boardId"], _entries(body), int(body["total"]))


@dataclass(frozen=True)
class Event:
    """A hot-counter event to log. Without ``event_id`` the client gives it one, so that a
    batch sent again after a lost answer is counted once."""

    member_id: str
    value: Decimal | int
    event_id: str | None = None


@dataclass(frozen=True)
class Notification:
    """One entry of a member's inbox: ``overtaken`` and ``newLeader`` name another member
    (``by_member_id``, ``by_score``); ``periodResult`` a period and the member's final rank."""

    id: str
    type: str
    board_id: str
    member_id: str
    by_member_id: str | None
    score: Decimal | None
    by_score: Decimal | None
    created_at: datetime
    period: str | None = None
    rank: int | None = None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Notification:
        return cls(
            id=body["id"],
            type=body["type"],
            board_id=body["boardId"],
            member_id=body["memberId"],
            by_member_id=body.get("byMemberId"),
            score=optional_score(body.get("score")),
            by_score=optional_score(body.get("byScore")),
            created_at=_moment(body["createdAt"]),
            period=body.get("period"),
            rank=_optional_int(body.get("rank")),
        )


@dataclass(frozen=True)
class NotificationPage:
    notifications: tuple[Notification, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> NotificationPage:
        found = tuple(Notification.from_json(n) for n in body["notifications"])
        return cls(found, body.get("nextCursor"))


@dataclass(frozen=True)
class Snapshot:
    """A board's top 100 and memberCount as the scheduled job recorded them."""

    snapshot_id: str
    taken_at: datetime
    member_count: int
    entries: tuple[Entry, ...]

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Snapshot:
        return cls(body["snapshotId"], _moment(body["takenAt"]), int(body["memberCount"]), _entries(body))


@dataclass(frozen=True)
class SnapshotPage:
    snapshots: tuple[Snapshot, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> SnapshotPage:
        return cls(tuple(Snapshot.from_json(s) for s in body["snapshots"]), body.get("nextCursor"))
