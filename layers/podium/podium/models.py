"""The service's vocabulary: typed records that the domain and the data-access layer pass
each other, and their JSON representations. Nothing here reads the clock, computes a key
or touches the database: this module imports neither side."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from podium.indexes import RANK_INDEXES as RANK_INDEXES
from podium.indexes import SHARD_MARK as SHARD_MARK
from podium.indexes import Checkpoint as Checkpoint
from podium.indexes import index_of_partition as index_of_partition
from podium.indexes import other_index as other_index
from podium.values import frozen

EMPTY_DATA_BYTES = 2  # "{}", the data of a member added without any
ORDERS = ("desc", "asc")
OPERATORS = ("increment", "best", "set")
TIE_BREAKS = ("shared", "earliest")
RESETS = ("never", "daily", "weekly", "monthly")
DEFAULT_SHARDS = 10
MAX_SHARDS = 100
DEFAULT_ANNOUNCE_TOP = 100  # members told their final rank when a period ends (podium.results)
MAX_ANNOUNCE_TOP = 10_000


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@frozen
class BoardSettings:
    """The settings fixed at a board's creation; a re-creation must repeat them exactly."""

    order: str = "desc"
    operator: str = "increment"
    tie_break: str = "shared"
    shards: int = DEFAULT_SHARDS
    reset: str = "never"
    retain_periods: int = 12
    rollup_to: tuple[str, ...] = ()
    # Which of the two ranking indexes (podium.models.RANK_INDEXES) reads use, and ``shards`` is
    # the layout of: a re-shard builds the other one and switches (podium.layouts).
    index: str = field(default="A", compare=False)
    # While a re-shard runs, until it cleans up: the other index and its shard count, whose
    # key every write sets too (podium.layouts). Never stored, never compared.
    also: tuple[str, int] | None = field(default=None, compare=False)

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


@frozen
class Limits:
    """What a board refuses of score submissions and events (``limits``); all None: none."""

    min_value: Decimal | None = None
    max_value: Decimal | None = None
    max_submissions_per_minute: int | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.min_value is not None:
            body["minValue"] = self.min_value
        if self.max_value is not None:
            body["maxValue"] = self.max_value
        if self.max_submissions_per_minute is not None:
            body["maxSubmissionsPerMinute"] = self.max_submissions_per_minute
        return body


@frozen
class BoardPolicy:
    """A board's settings that an admin may change at any time: who besides admins may
    write and read it, and what it refuses."""

    client_writes: bool = False
    public_read: bool = False
    limits: Limits = field(default_factory=Limits)
    announce_top: int = DEFAULT_ANNOUNCE_TOP  # a time-windowed board's members told their result


@frozen
class Reshard:
    """A board's move to another shard count (podium.resharding): from index ``from_index``
    on ``from_shards`` shards to the other index on ``to_shards``. Started, then switched
    (reads use the new index), then ended once the old index is emptied; podium.layouts
    has its phases."""

    from_shards: int
    to_shards: int
    started_at: datetime
    copied: int = 0  # score items given their key in the new index so far
    ended_at: datetime | None = None
    from_index: str = "A"
    switched_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {"toShards": self.to_shards, "startedAt": iso(self.started_at), "copied": self.copied}


@frozen
class Board:
    """A board: its settings, title and when it was created."""

    board_id: str
    settings: BoardSettings
    title: str | None
    created_at: datetime
    member_count: int = 0
    dropped_events: int = 0
    period: str | None = None  # a time-windowed board's current period, as the domain read it
    policy: BoardPolicy = field(default_factory=BoardPolicy)
    largest_data: int = EMPTY_DATA_BYTES  # bytes of its largest data
    reshard: Reshard | None = None  # a move to another shard count, on or just ended

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "boardId": self.board_id,
            "order": self.settings.order,
            "operator": self.settings.operator,
            "tieBreak": self.settings.tie_break,
            "shards": self.settings.shards,
            "title": self.title,
            "memberCount": self.member_count,
            "clientWrites": self.policy.client_writes,
            "publicRead": self.policy.public_read,
            "limits": self.policy.limits.to_json(),
            "createdAt": iso(self.created_at),
        }
        if self.settings.reset != "never":
            body["reset"] = self.settings.reset
            body["period"] = self.period
            body["retainPeriods"] = self.settings.retain_periods
            body["announceTop"] = self.policy.announce_top
        if self.settings.rollup_to:
            body["rollupTo"] = list(self.settings.rollup_to)
        if self.dropped_events:
            body["droppedEvents"] = self.dropped_events
        if self.reshard is not None and self.reshard.switched_at is None and self.reshard.ended_at is None:
            body["reshard"] = self.reshard.to_json()
        return body


# A score item keeps its scores before, newest first, in this many characters: a change read
# late is judged by the scores of its moment (podium.notifier); under 1 KB with the longest ids.
HISTORY_CHARS = 176


class Unknown:
    """What ``ScoreState.score_at`` answers for a moment older than the history it keeps."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown()


@frozen
class ScoreState:
    """What the score item holds: small, and apart from the member's data."""

    score: Decimal
    version: int  # 1 for the first score of a period, one more for every change
    reached_at_us: int  # when the score became ``score``
    # The scores held before, newest first, as (since, score); complete: back to the first.
    history: tuple[tuple[int, Decimal], ...] = ()
    history_complete: bool = True
    # A hidden member's score item is kept up to date but carries no index keys, so that
    # no ranking, and nothing the stream derives from the index keys, sees it.
    hidden: bool = False
    shown_at_us: int = 0  # when the member was last hidden or shown (0: never)
    created_us: int = 0  # when this item (the member's incarnation) was made (0: not kept)
    rolled_up_us: int = 0  # a ``set`` rollup target's: when the last change it took was made

    @classmethod
    def first(cls, score: Decimal, reached_at_us: int, hidden: bool = False) -> ScoreState:
        return cls(score, 1, reached_at_us, hidden=hidden, created_us=reached_at_us)

    def then(self, score: Decimal, reached_at_us: int) -> ScoreState:
        """The state after a write of ``score``: a new score remembers this one; the same
        score (a fold that adds up to nothing) keeps its time and history. A new score is
        timed after the old one even by a writer whose clock is behind (podium.stream.rollups)."""
        if score == self.score:
            return replace(self, version=self.version + 1)
        reached_at_us = max(reached_at_us, self.reached_at_us + 1)
        held = ((self.reached_at_us, self.score), *self.history)
        kept = held
        while kept and len(encode_history(kept)) > HISTORY_CHARS:
            kept = kept[:-1]
        complete = self.history_complete and len(kept) == len(held)
        return replace(
            self,
            score=score,
            version=self.version + 1,
            reached_at_us=reached_at_us,
            history=kept,
            history_complete=complete,
        )

    def shown(self, visible: bool, now_us: int) -> ScoreState:
        """The state after a hide (``visible`` False) or an unhide at ``now_us``: the same
        score, time and history, and a new version, so that a write that read the state
        before fails its condition and reads it again."""
        return replace(self, version=self.version + 1, hidden=not visible, shown_at_us=now_us)

    def score_at(self, moment_us: int) -> Decimal | Unknown | None:
        """The score this member held at ``moment_us``: None when it had none yet in this
        item's life, UNKNOWN when that is older than the history kept."""
        if moment_us >= self.reached_at_us:
            return self.score
        for since, score in self.history:
            if moment_us >= since:
                return score
        return None if self.history_complete else UNKNOWN

    def history_text(self) -> str:
        """The history as the item keeps it: ``since:score`` pairs, newest first, after a
        ``~`` when older ones were dropped."""
        return ("" if self.history_complete else "~") + encode_history(self.history)


def encode_history(history: tuple[tuple[int, Decimal], ...]) -> str:
    return ";".join(f"{since}:{score}" for since, score in history)


def decode_history(text: str) -> tuple[tuple[tuple[int, Decimal], ...], bool]:
    """The history and whether it is complete, from ``ScoreState.history_text``."""
    complete = not text.startswith("~")
    text = text.lstrip("~")
    if not text:
        return (), complete
    pairs = (part.split(":", 1) for part in text.split(";"))
    return tuple((int(since), Decimal(score)) for since, score in pairs), complete


# An ended follow is remembered longer than a stream keeps a record (24 h), so that a change
# read late is judged by who followed whom at its moment.
ENDED_FOLLOW_KEEP_US = 48 * 3600 * 1_000_000
# How long an inbox keeps a notification: its TTL, and how far back a page reads.
INBOX_KEEP_SECONDS = 30 * 24 * 3600


@frozen
class Rivals:
    """A member's rivals list, with when it began to follow each (``since``, in µs) and the
    follows that ended lately (``ended``: rival -> (since, until))."""

    ids: tuple[str, ...] = ()
    since: dict[str, int] = field(default_factory=dict)
    ended: dict[str, tuple[int, int]] = field(default_factory=dict)
    # One more at every write of the list (0: no list yet, or one written before lists had
    # versions): a replacement is written only over the version it read.
    version: int = 0

    def follow_began(self, rival: str, moment_us: int) -> int | None:
        """When the follow of ``rival`` that held at ``moment_us`` began (0 in a list from before
        follows had times: followed all along); None when this member did not follow it then."""
        if rival in self.ids and self.since.get(rival, 0) <= moment_us:
            return self.since.get(rival, 0)
        if rival in self.ended:
            began, ended = self.ended[rival]
            return began if began <= moment_us < ended else None
        return None

    def replaced(self, ids: list[str], now_us: int) -> Rivals:
        """The list after replacing it by ``ids`` at ``now_us``: a rival kept keeps its
        ``since``; one dropped is remembered as ended for ENDED_FOLLOW_KEEP_US (the latest
        such span of each rival)."""
        since = {rival: self.since.get(rival, 0) if rival in self.ids else now_us for rival in ids}
        ended = {rival: span for rival, span in self.ended.items() if span[1] > now_us - ENDED_FOLLOW_KEEP_US}
        for rival in self.ids:
            if rival not in ids:
                ended[rival] = (self.since.get(rival, 0), now_us)
        return Rivals(tuple(ids), since, ended, self.version + 1)


@frozen
class Member:
    """A member of a board: the score of the period read, and the member's data."""

    board_id: str
    member_id: str
    score: Decimal | None  # None: no score in the period read (time-windowed boards)
    data: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    hidden: bool = False  # taken out of every ranking by an admin (its scores still count)

    def to_json(self, with_hidden: bool = True) -> dict[str, Any]:
        """The member as the API shows it; ``hidden`` only to admins (``with_hidden``)."""
        shown: dict[str, Any] = {
            "boardId": self.board_id,
            "memberId": self.member_id,
            "score": self.score,
            "data": self.data,
            "hidden": self.hidden,
            "createdAt": iso(self.created_at),
            "updatedAt": iso(self.updated_at),
        }
        if not with_hidden:
            del shown["hidden"]
        return shown


@frozen
class IndexEntry:
    """One entry of the ranking index, decoded from its sort key."""

    sort_key: str
    member_id: str
    score: Decimal


@frozen
class RankedEntry:
    """One line of a ranked list: rank, member, score, and the data when asked for."""

    rank: int
    member_id: str
    score: Decimal
    data: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"rank": self.rank, "memberId": self.member_id, "score": self.score}
        if self.data is not None:
            body["data"] = self.data
        return body


@frozen
class Page:
    """A page of a ranked list, the total it ranks among, and the cursor to the next page."""

    entries: list[RankedEntry]
    total: int
    next_cursor: str | None = None


@frozen
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


@frozen
class ScoreChange:
    """A member's score change: the score, and the one it replaced."""

    member_id: str
    score: Decimal
    previous_score: Decimal | None  # None: the first score of a period

    def to_json(self) -> dict[str, Any]:
        return {"memberId": self.member_id, "score": self.score, "previousScore": self.previous_score}


@dataclass
class BoardList:
    """A page of boards and the cursor to the next page."""

    boards: list[Board] = field(default_factory=list)
    next_cursor: str | None = None


@frozen
class Notification:
    """One entry of a member's inbox; its id is derived from what caused it (a stream
    record, or a period's end), so a cause handled twice yields the same notification,
    stored once. ``overtaken`` and ``newLeader`` name another member (``by_*``); a
    ``periodResult`` names the period and the member's final rank in it."""

    notification_id: str
    type: str
    board_id: str
    member_id: str
    by_member_id: str | None
    score: Decimal
    by_score: Decimal | None
    created_us: int
    period: str | None = None
    rank: int | None = None

    @property
    def created_at(self) -> datetime:
        return datetime.fromtimestamp(self.created_us / 1_000_000, tz=UTC)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.notification_id,
            "type": self.type,
            "boardId": self.board_id,
            "memberId": self.member_id,
            "byMemberId": self.by_member_id,
            "score": self.score,
            "byScore": self.by_score,
            "period": self.period,
            "rank": self.rank,
            "createdAt": iso(self.created_at),
        }
        return {name: value for name, value in body.items() if value is not None}


@frozen
class EventPage:
    """The events of one member in one ``POST .../events`` request: a page of the log of a
    hot counter (see podium.events). A page being claimed holds its events (eventId or
    None, value); a claimed page holds only their sum and number, its ids claimed and the
    events that reuse an id left out."""

    board_id: str
    member_id: str
    period: str
    request: str  # the request's id: unique per insert, and the holder of the ids it claims
    claimed: bool
    total: Decimal
    count: int
    events: tuple[tuple[str | None, Decimal], ...] = ()


@frozen
class Placement:
    """Where a member's score item sits in the ranking index: the shard partition
    (``rpk``) and the sort key (``rsk``), and when the item expires (a windowed board's
    period), as the domain computes them (``podium.keys.placement``)."""

    partition: str
    sort_key: str
    expires: int | None = None
    # While a re-shard runs: the member's partition in the other index, written too.
    also: str | None = None


@frozen
class HeadItem:
    """The head item as stored (``podium.head`` reads it into a ``Head``): the best keys,
    whether they are the whole board, its version, and the ladder's samples (keys, counts
    below each, the index's size when within reach, changes since it was read)."""

    keys: list[str]
    complete: bool
    version: int
    ladder: tuple[tuple[str, ...], tuple[int, ...], int | None, int] | None = None
    # The primary head's copies (podium.dal.structures) may still hold an older version: a
    # write of one failed after this version was written, and the next upkeep writes them.
    copies_owed: bool = False


@frozen
class LeaderState:
    """The board's leader as the notifier last saw it, and notifications still to deliver."""

    member_id: str | None
    sort_key: str | None
    score: Decimal | None
    version: int
    pending: list[Notification]


@frozen
class View:
    """What a ranking read needs before it touches the index, read in one BatchGetItem."""

    board: Board | None
    period_count: int
    score: ScoreState | None
    head: HeadItem | None
