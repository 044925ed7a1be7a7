"""The ports the domain depends on: what it asks of storage and of the notification topic,
as typed protocols. ``podium.dal`` implements them (``Database`` is a ``Repositories``);
tests may hand the domain anything that does."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from podium.counttree import Count, LeafWrite, Node, NodeId, Put, Version
    from podium.dal.audit import BoardItems, IndexEntry
    from podium.dal.results import Announcement, ResultsBoard
    from podium.idempotency import RecordedSubmission, SubmissionKey
    from podium.models import (
        Board,
        BoardPolicy,
        Checkpoint,
        EventPage,
        HeadItem,
        LeaderState,
        Notification,
        Placement,
        RankedEntry,
        Rivals,
        ScoreChange,
        ScoreState,
        Snapshot,
        View,
    )


class BoardStore(Protocol):
    def get_board(self, board_id: str, *, consistent: bool = False) -> Board | None: ...
    def create_board(self, board: Board, first_period: str) -> bool: ...
    def update_board(self, board_id: str, title: str | None, policy: BoardPolicy) -> None: ...
    def remember_deleted(self, board_id: str, member_id: str, gone_us: int) -> None: ...
    def deleted_at(self, board_id: str, member_id: str) -> int | None: ...
    def list_boards(self, limit: int, after: str | None) -> tuple[list[Board], str | None]: ...
    def list_board_ids(self, limit: int, after: str | None) -> tuple[list[str], str | None]: ...
    def apply_member_count(
        self, event_id: str, board_id: str, delta: int, period: str | None = None, expires: int | None = None
    ) -> bool: ...
    def apply_member_counts(
        self,
        board_id: str,
        changes: Sequence[tuple[str, int]],
        period: str | None = None,
        expires: int | None = None,
    ) -> None: ...
    def view(
        self,
        board_id: str,
        period: str,
        *,
        with_count: bool,
        member_id: str | None = None,
        head: bool = False,
    ) -> View: ...
    def head(self, board_id: str, period: str) -> HeadItem | None: ...


class MemberStore(Protocol):
    def get_score(self, board_id: str, member_id: str, period: str) -> ScoreState | None: ...
    def get_member(
        self, board_id: str, member_id: str, period: str
    ) -> tuple[dict[str, Any] | None, ScoreState | None]: ...
    def exists(self, board_id: str, member_id: str) -> bool: ...
    def joined_us(self, board_id: str, member_id: str) -> int | None: ...
    def hidden(self, board_id: str, member_id: str) -> bool | None: ...
    def scores_between(
        self, board_id: str, member_id: str, first: str, last: str
    ) -> dict[str, ScoreState]: ...
    def get_scores(self, board_id: str, member_ids: Sequence[str], period: str) -> dict[str, ScoreState]: ...
    def versions(
        self, board_id: str, member_ids: Sequence[str], period: str, *, consistent: bool
    ) -> dict[str, tuple[str | None, Version]]: ...
    def get_data(self, board_id: str, member_ids: Sequence[str]) -> dict[str, dict[str, Any]]: ...
    def create_member(
        self,
        board_id: str,
        member_id: str,
        data: dict[str, Any],
        score: tuple[ScoreState, Placement] | None,
        period: str,
        now: datetime,
        mark: str | None = None,
        hidden: bool = False,
    ) -> bool: ...
    def update_member(
        self,
        board_id: str,
        member_id: str,
        data: dict[str, Any] | None,
        score: tuple[int | None, ScoreState, Placement] | None,
        period: str,
        now: datetime,
        hidden_was: bool = False,
        hidden: bool | None = None,
    ) -> None: ...
    def write_score(
        self,
        board_id: str,
        member_id: str,
        expected_version: int | None,
        state: ScoreState,
        placement: Placement,
        period: str,
        mark: str | None = None,
        answer: tuple[SubmissionKey, ScoreChange] | None = None,
        also: Sequence[tuple[str, Any]] = (),
    ) -> None: ...
    def recorded_submission(
        self, board_id: str, member_id: str, key: SubmissionKey
    ) -> RecordedSubmission | None: ...
    def record_submission(
        self, board_id: str, member_id: str, key: SubmissionKey, change: ScoreChange
    ) -> bool: ...
    def fence(self, board_id: str, member_id: str, now_us: int) -> int | None: ...
    def delete_member(self, board_id: str, member_id: str, gone_us: int) -> None: ...
    def count_submission(
        self, board_id: str, member_id: str, minute: str, limit: int, expires: int, count: int
    ) -> bool: ...
    def uncount_submission(self, board_id: str, member_id: str, minute: str, count: int) -> None: ...
    def rollup_state(
        self, board_id: str, member_id: str, period: str, mark: str
    ) -> tuple[bool, ScoreState | None]: ...


class IndexReader(Protocol):
    """One shard partition of a ranking index at a time; the partition key names the index
    (``podium.keys.partitions`` gives those of the board's layout)."""

    def keys_in_range(
        self,
        partition: str,
        lo: str | None,
        hi: str | None,
        *,
        limit: int | None = None,
        reverse: bool = False,
    ) -> list[str]: ...
    def count_range(self, partition: str, lo: str | None, hi: str | None) -> int: ...


class StructureStore(Protocol):
    def get_head(self, board_id: str, period: str, *, consistent: bool = False) -> HeadItem | None: ...
    def put_head(self, board_id: str, period: str, head: HeadItem, expires: int | None) -> bool: ...
    def heal_copies(self, board_id: str, period: str, stored: HeadItem, expires: int | None) -> None: ...
    def get_head_copy(self, board_id: str, period: str, copy: int) -> HeadItem | None: ...
    def get_head_copies(self, board_id: str, period: str) -> list[HeadItem | None]: ...


class TreeStore(Protocol):
    """The count tree's items (``podium.counttree``): each method the keeper and the reader
    call is one request, atomic, so that their steps can interleave with other writers' in
    any order; a build's (``put_nodes``, ``drop``) and the checker's (``all_nodes``) are
    not, and expect no writer meanwhile."""

    def read_nodes(
        self, board_id: str, period: str, ids: Iterable[NodeId], *, consistent: bool
    ) -> dict[NodeId, Node]:
        """The nodes found among ``ids``."""
        ...

    def plant_root(self, board_id: str, period: str, expires: int | None) -> None:
        """An empty root leaf, unless the tree has a root."""
        ...

    def write_leaf(self, board_id: str, period: str, write: LeafWrite) -> tuple[bool, Node | None]:
        """Carry out ``write`` on its condition: (True, the leaf after it), or (False, the
        node as it is: None when there is none)."""
        ...

    def write_leaf_jointly(
        self, board_id: str, period: str, writes: Sequence[LeafWrite]
    ) -> tuple[bool, Node | None]:
        """Carry out ``writes``, of different members to the same leaf (none dropping
        another's tombstone), at once on all their conditions, or none of them: answered as
        ``write_leaf``."""
        ...

    def report(
        self, board_id: str, period: str, parent: NodeId, level: int, counts: Mapping[str, Count]
    ) -> tuple[bool, Node | None]:
        """Set the children's ``counts`` (by lower end) in ``parent``, a node of ``level``
        that has them all, each over an older ``sv`` only: (True, the parent before), or
        (False, the node as it is: None when there is none)."""
        ...

    def replace(self, board_id: str, period: str, puts: Sequence[Put], expires: int | None) -> bool:
        """Write the nodes whole, together, each on its condition; False when any fails."""
        ...

    def put_nodes(self, board_id: str, period: str, nodes: Sequence[Node], expires: int | None) -> None:
        """Write the nodes whole, unconditionally (a build, on a tree nobody else writes)."""
        ...

    def all_nodes(self, board_id: str, period: str) -> list[Node]:
        """Every node of the tree, read strongly consistent."""
        ...

    def drop(self, board_id: str, period: str) -> int:
        """Delete every node of the tree; how many there were."""
        ...


class SocialStore(Protocol):
    def get_rivals(self, board_id: str, member_id: str) -> Rivals | None: ...
    def put_rivals(
        self, board_id: str, member_id: str, rivals: Rivals, previous: Rivals, ended_ttl_s: int
    ) -> None: ...
    def drop_follows(self, board_id: str, follower: str, rivals: Rivals) -> None: ...
    def delete_followers(self, board_id: str, rival: str, followers: Sequence[str]) -> None: ...
    def forget_rival(self, board_id: str, follower: str, rival: str, before_us: int) -> bool: ...
    def followers(self, board_id: str, member_id: str) -> list[str]: ...
    def followers_page(
        self, board_id: str, member_id: str, limit: int, after: str | None
    ) -> tuple[list[str], bool]: ...
    def follower_states(
        self, board_id: str, followers: Sequence[str], period: str
    ) -> dict[str, tuple[ScoreState | None, Rivals]]: ...
    def start_fanout(
        self, board_id: str, member_id: str, job: str, body: str, cursor: str | None
    ) -> bool: ...
    def advance_fanout(
        self, board_id: str, member_id: str, job: str, step: int, cursor: str | None, done: bool
    ) -> bool: ...
    def pending_fanouts(
        self, board_id: str, member_id: str, forgets_only: bool = False
    ) -> list[tuple[str, str, str | None, int]]: ...
    def put_notification(self, notification: Notification, ttl_seconds: int) -> bool: ...
    def notification_published(self, notification: Notification) -> bool: ...
    def mark_published(self, notification: Notification) -> None: ...
    def list_notifications(
        self,
        board_id: str,
        member_id: str,
        limit: int,
        before: str | None,
        now_s: int,
        since_us: int = 0,
    ) -> tuple[list[Notification], str | None]: ...
    def clear_inbox(self, board_id: str, member_id: str, upto_us: int, limit: int) -> tuple[int, bool]: ...
    def get_leader(self, board_id: str, period: str) -> LeaderState | None: ...
    def swap_leader(
        self,
        board_id: str,
        period: str,
        expected_version: int | None,
        leader: tuple[str, str, Decimal] | None,
        pending: list[Notification],
        event_id: str,
    ) -> bool: ...
    def mark_leaders_judged(self, event_ids: list[str]) -> None: ...
    def clear_leader_pending(self, board_id: str, period: str, version: int) -> None: ...


class EventStore(Protocol):
    """The event log of hot counters: pages of events and the claims of their ids
    (``podium.events``, ``podium.stream.fold``)."""

    def log_pages(self, pages: Sequence[EventPage], expires: int) -> None: ...
    def log_claimed_pages(
        self,
        board_id: str,
        pages: Sequence[EventPage],
        claims: Sequence[tuple[str, str]],
        request: str,
        claim_expires: int,
        now: int,
        expires: int,
    ) -> set[tuple[str, str]] | None: ...
    def claim_ids(
        self,
        board_id: str,
        claims: Sequence[tuple[str, str]],
        request: str,
        expires: int,
        now: int,
    ) -> set[tuple[str, str]]: ...
    def read_claims(
        self, board_id: str, claims: Sequence[tuple[str, str]], request: str, now: int
    ) -> tuple[set[tuple[str, str]], list[tuple[str, str]]]: ...
    def settle_pages(self, pages: Sequence[EventPage], expires: int) -> None: ...
    def pages_now(self, pages: Sequence[EventPage]) -> list[EventPage]: ...
    def page_removals(self, pages: Sequence[EventPage]) -> list[tuple[str, Any]]: ...
    def delete_pages(self, pages: Sequence[EventPage]) -> None: ...
    def count_dropped(self, board_id: str, pages: Sequence[EventPage], count: int) -> bool: ...
    def claimed_pages(
        self, board_id: str, member_id: str, most: int | None = None
    ) -> tuple[list[EventPage], list[int], bool]: ...
    def period_has_events(self, board_id: str, period: str) -> bool: ...


class ResultStore(Protocol):
    """A period's announcement and each board's progress (``podium.results``)."""

    def windowed_boards(self, board_ids: Sequence[str]) -> list[ResultsBoard]: ...
    def get_announcement(self, board_id: str, period: str) -> Announcement | None: ...
    def put_announced_parts(
        self, board_id: str, period: str, run: str, parts: Sequence[Sequence[RankedEntry]], expires: int
    ) -> None: ...
    def announced_part(self, board_id: str, period: str, run: str, number: int) -> list[RankedEntry]: ...
    def claim_announcement(self, announcement: Announcement, expires: int) -> bool: ...
    def mark_period_closed(self, board_id: str, period: str) -> None: ...
    def advance_announcement(self, board_id: str, period: str, told: int, now_told: int) -> bool: ...
    def finish_announcement(self, board_id: str, period: str) -> None: ...


class SnapshotStore(Protocol):
    def put_snapshot(self, snapshot: Snapshot, expires_at: int) -> bool: ...
    def list_snapshots(
        self,
        board_id: str,
        limit: int,
        before_sort_key: str | None,
        now_s: int,
        since_sort_key: str | None = None,
    ) -> tuple[list[Snapshot], str | None]: ...


class AuditStore(Protocol):
    """What the consistency checker reads raw, and the repairs no other store makes."""

    def board_items(self, board_id: str) -> BoardItems: ...
    def index_entries(self, partition: str) -> list[IndexEntry]: ...
    def stored_counts(self, board_id: str, period: str | None) -> tuple[int | None, int | None]: ...
    def set_member_count(self, board_id: str, seen: int | None, value: int) -> bool: ...
    def set_period_count(
        self, board_id: str, period: str, seen: int | None, value: int, expires: int | None
    ) -> bool: ...
    def delete_orphan_score(self, board_id: str, member_id: str, period: str, version: int) -> bool: ...
    def drop_index_keys(self, entry: IndexEntry) -> bool: ...


class ReshardStore(Protocol):
    def start_reshard(
        self,
        board_id: str,
        from_index: str,
        from_shards: int,
        to_shards: int,
        started_at: datetime,
        settled: datetime,
    ) -> bool: ...
    def moving_boards(self) -> list[str]: ...
    def reshard_progress(self, board_id: str) -> tuple[Board, Checkpoint | None] | None: ...
    def claim_reshard(self, board_id: str, owner: str, now_ms: int, until_ms: int) -> bool: ...
    def release_reshard(self, board_id: str, owner: str) -> bool: ...
    def advance_reshard(
        self, board_id: str, owner: str, copied: int, checkpoint: Checkpoint | None
    ) -> bool: ...
    def switch_reshard(
        self, board_id: str, owner: str, to_index: str, to_shards: int, switched_at: datetime
    ) -> bool: ...
    def end_reshard(self, board_id: str, owner: str, ended_at: datetime) -> bool: ...
    def forget_reshard(self, board_id: str) -> None: ...
    def set_index_key(self, board_id: str, member_id: str, period: str, partition: str) -> bool: ...
    def remove_index_key(self, board_id: str, member_id: str, period: str, index: str) -> bool: ...


class Repositories(Protocol):
    """Every store of the service (``podium.dal.Database``)."""

    @property
    def boards(self) -> BoardStore: ...
    @property
    def members(self) -> MemberStore: ...
    @property
    def index(self) -> IndexReader: ...
    @property
    def structures(self) -> StructureStore: ...
    @property
    def tree(self) -> TreeStore: ...
    @property
    def social(self) -> SocialStore: ...
    @property
    def eventlog(self) -> EventStore: ...
    @property
    def snapshots(self) -> SnapshotStore: ...
    @property
    def audit(self) -> AuditStore: ...
    @property
    def results(self) -> ResultStore: ...
    @property
    def reshards(self) -> ReshardStore: ...


class Publisher(Protocol):
    def publish(self, notification: Notification) -> None: ...


class Announcer(Publisher, Protocol):
    """A publisher that also sends a message of its own to the topic (``periodClosed``)."""

    def publish_message(self, body: Mapping[str, Any], attributes: Mapping[str, str]) -> None: ...
