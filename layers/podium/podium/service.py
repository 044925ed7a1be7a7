"""The leaderboard's domain operations: what each access pattern does.

Takes and returns the typed models of ``podium.models``; every read and write goes
through ``podium.store``.
"""

from __future__ import annotations

import random
import re
import time
from bisect import bisect_left
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import cache
from typing import Any, TypeVar, overload

from podium import buckets, clock, numbers, periods
from podium.buckets import just_above, just_below
from podium.errors import Conflict, NotFound, ValidationError
from podium.keys import ALL_TIME, Cursor, RankOrder, mirror, rank_partition_key, unmirror
from podium.models import (
    Board,
    BoardList,
    BoardSettings,
    IndexEntry,
    Member,
    Notification,
    Page,
    RankedEntry,
    Rivals,
    ScoreChange,
    ScoreState,
)
from podium.ranking import (
    Hint,
    TopStats,
    around_window,
    assign_ranks,
    decode,
    gather_top,
)
from podium.store import ItemMissing, Store, VersionConflict, View, default_store
from podium.validation import BoardRequest, EventRequest, MemberRequest

Clock = Callable[[], datetime]
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")

# Optimistic locking retries: under N concurrent writers to one member each round lets
# one through, so this bounds the contention a single member's item absorbs before the
# client is told to back off (hot members belong on the event log instead).
MAX_WRITE_ATTEMPTS = 64

# Below this many members a rank counts the index (a few RCU, and fresh at once); above
# it the score buckets bound the cost whatever the board's size (podium.buckets).
COUNT_INDEX_UP_TO = 2 * buckets.SPLIT_AT


def system_clock() -> datetime:
    return clock.now()


def to_microseconds(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def apply_operator(settings: BoardSettings, old: Decimal | None, value: Decimal) -> Decimal:
    """The score after a submission; ``old`` is None for the first one of a period."""
    if settings.operator == "increment":
        return numbers.add(old if old is not None else Decimal(0), value)
    if settings.operator == "best" and old is not None:
        return value if settings.is_better(value, old) else old
    return value


@dataclass(frozen=True)
class Before:
    """What precedes a page that continues after a cursor, counted when the page is read:
    ``position`` entries sort at or before the cursor's key, ``rank`` of them have a score
    strictly better than the cursor's ``score`` (for shared ranks)."""

    position: int
    rank: int
    score: Decimal


@cache
def _side_pool() -> ThreadPoolExecutor:
    """Threads for the second of two reads a request makes at once; apart from the store's
    pool, which both reads use for their shard queries."""
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="podium-side")


def _backoff(attempt: int) -> None:
    time.sleep(random.uniform(0, min(0.05, 0.002 * 2**attempt)))


class LeaderboardService:
    last_top_stats: TopStats | None = None  # what the last index read of ``top`` cost

    def __init__(self, store: Store, clock: Clock = system_clock) -> None:
        self.store = store
        self.clock = clock
        self._settings_cache: dict[str, BoardSettings] = {}

    # -- boards -----------------------------------------------------------------------

    def put_board(self, board_id: str, request: BoardRequest) -> tuple[Board, bool]:
        """Create the board (True) or confirm it exists with the same settings (False)."""
        existing = self.store.get_board(board_id, consistent=True)
        if existing is None:
            for target in request.settings.rollup_to:
                # Targets must exist first; as settings never change, no cycle can form.
                if self.store.get_board(target, consistent=True) is None:
                    raise ValidationError(f"rollupTo target {target} does not exist: create it first")
            board = Board(board_id, request.settings, request.title, self.clock())
            if self.store.create_board(board):
                return board, True
            existing = self.store.get_board(board_id, consistent=True)
            assert existing is not None
        differing = request.settings.differences(existing.settings)
        if differing:
            raise Conflict(
                f"board {board_id} exists with different settings: {', '.join(differing)} "
                "cannot change after creation"
            )
        if request.title is not None and request.title != existing.title:
            self.store.set_board_title(board_id, request.title)
            existing = Board(
                board_id, existing.settings, request.title, existing.created_at, existing.member_count
            )
        return existing, False

    def get_board(self, board_id: str) -> Board:
        board = self.store.get_board(board_id)
        if board is None:
            raise NotFound(f"board {board_id} does not exist")
        return board

    def list_boards(self, limit: int, cursor: str | None) -> BoardList:
        after = None
        if cursor is not None:
            from podium.validation import BOARD_ID

            if not BOARD_ID.fullmatch(cursor):
                raise ValidationError("cursor is not valid: pass the nextCursor of a previous page")
            after = cursor
        boards, last = self.store.list_boards(limit, after)
        return BoardList(boards=boards, next_cursor=last)

    def board_settings(self, board_id: str) -> BoardSettings:
        """A board's fixed settings; cached, since they never change once created."""
        cached = self._settings_cache.get(board_id)
        if cached is None:
            cached = self.get_board(board_id).settings
            self._settings_cache[board_id] = cached
        return cached

    # -- members ----------------------------------------------------------------------

    def period(self, settings: BoardSettings, requested: str | None = None) -> str:
        """The period a request means: the current one by the clock, unless it asks for
        ``previous`` or a period id (time-windowed boards)."""
        return periods.resolve(settings.reset, requested, self.clock(), settings.retain_periods)

    def put_member(self, board_id: str, member_id: str, request: MemberRequest) -> tuple[Member, bool]:
        """Add the member or replace its data; a score given goes to the current period
        (on a board that never resets, a new member starts at 0)."""
        settings = self.board_settings(board_id)
        windowed = settings.reset != "never"
        for attempt in range(MAX_WRITE_ATTEMPTS):
            now = self.clock()
            period = periods.period_of(settings.reset, now)
            profile, state = self.store.get_member(board_id, member_id, period)
            reached = to_microseconds(now)
            if profile is None:
                score = request.score if request.score is not None or windowed else Decimal(0)
                data = request.data if request.data is not None else {}
                new_state = ScoreState.first(score, reached) if score is not None else None
                if self.store.create_member(board_id, settings, member_id, data, new_state, period, now):
                    return Member(board_id, member_id, score, data, now, now), True
                continue
            change = None
            score = state.score if state else None
            if request.score is not None and request.score != score:
                score = request.score
                version = state.version if state else None
                change = (version, state.then(score, reached) if state else ScoreState.first(score, reached))
            try:
                self.store.update_member(board_id, settings, member_id, request.data, change, period, now)
            except (VersionConflict, ItemMissing):
                _backoff(attempt)
                continue
            data = request.data if request.data is not None else profile["data"]
            return Member(board_id, member_id, score, data, profile["createdAt"], now), False
        raise Conflict(f"member {member_id} is being changed by many writers at once; retry")

    def get_member(self, board_id: str, member_id: str, requested_period: str | None = None) -> Member:
        settings = self.board_settings(board_id)
        period = self.period(settings, requested_period)
        profile, state = self.store.get_member(board_id, member_id, period)
        if profile is None:
            raise NotFound(f"member {member_id} does not exist on board {board_id}")
        return Member(
            board_id,
            member_id,
            state.score if state else None,
            profile["data"],
            profile["createdAt"],
            profile["updatedAt"],
        )

    def delete_member(self, board_id: str, member_id: str) -> None:
        self.board_settings(board_id)
        self.store.delete_member(board_id, member_id)

    def submit_score(self, board_id: str, member_id: str, value: Decimal) -> ScoreChange:
        """Apply the board's operator atomically: read, compute, write if unchanged since.
        On a time-windowed board the first submission of a period starts its score."""
        settings = self.board_settings(board_id)
        for attempt in range(MAX_WRITE_ATTEMPTS):
            now = self.clock()
            period = periods.period_of(settings.reset, now)
            state = self.store.get_score(board_id, member_id, period)
            if state is None and settings.reset == "never":
                raise NotFound(
                    f"member {member_id} does not exist on board {board_id}; add it with PUT first"
                )
            old = state.score if state else None
            new_score = apply_operator(settings, old, value)
            try:
                new_score = numbers.check_score(new_score, "score")
            except ValidationError as error:
                raise ValidationError(f"value would take the score out of bounds: {error.message}") from error
            if state is not None and new_score == state.score:
                return ScoreChange(member_id, state.score, state.score)
            version = state.version if state else None
            reached = to_microseconds(now)
            new_state = state.then(new_score, reached) if state else ScoreState.first(new_score, reached)
            try:
                self.store.write_score(board_id, settings, member_id, version, new_state, period)
            except ItemMissing as error:
                raise NotFound(
                    f"member {member_id} does not exist on board {board_id}; add it with PUT first"
                ) from error
            except VersionConflict:
                _backoff(attempt)
                continue
            return ScoreChange(member_id, new_score, old)
        raise Conflict(f"member {member_id} is being changed by many writers at once; retry")

    # -- hot counters: the event log --------------------------------------------------

    def log_events(self, board_id: str, requests: list[EventRequest]) -> int:
        """Insert the events (no read); the fold counts them within seconds."""
        from podium import events  # only this route and fresh_member need the event log

        settings = self.board_settings(board_id)
        now = self.clock()
        logged = events.to_log(board_id, settings, requests, now)
        if logged:
            self.store.log_events(logged, int(now.timestamp()) + events.LOG_TTL_SECONDS)
        return len(requests)

    def fresh_member(
        self, board_id: str, member_id: str, requested_period: str | None = None
    ) -> tuple[Member, int]:
        """The member with its score as of now: the last fold plus the events logged since,
        and how many of its distinct events are not folded yet."""
        from podium import events

        member = self.get_member(board_id, member_id, requested_period)
        period = self.period(self.board_settings(board_id), requested_period)
        state, pending_sum, pending = events.fresh_score(self.store, board_id, member_id, period)
        base = state.score if state else None
        score = numbers.add(base or Decimal(0), pending_sum) if (base is not None or pending) else None
        fresh = Member(board_id, member_id, score, member.data, member.created_at, member.updated_at)
        return fresh, pending

    # -- rivals and notifications -----------------------------------------------------

    def _require_member(self, board_id: str, member_id: str) -> None:
        self.board_settings(board_id)
        profile, _ = self.store.get_member(board_id, member_id, ALL_TIME)
        if profile is None:
            raise NotFound(f"member {member_id} does not exist on board {board_id}")

    def put_rivals(self, board_id: str, member_id: str, rivals: list[str]) -> list[str]:
        """Replace the member's rivals, remembering since when it follows each (and, for a
        while, whom it stopped following and when), so that the notifier judges a change
        by who followed whom at its moment."""
        self._require_member(board_id, member_id)
        previous = self.store.get_rivals(board_id, member_id) or Rivals()
        replaced = previous.replaced(rivals, to_microseconds(self.clock()))
        self.store.put_rivals(board_id, member_id, replaced, previous)
        return rivals

    def get_rivals(self, board_id: str, member_id: str) -> list[str]:
        self._require_member(board_id, member_id)
        found = self.store.get_rivals(board_id, member_id)
        return list(found.ids) if found else []

    def notifications(
        self, board_id: str, member_id: str, limit: int, cursor: str | None
    ) -> tuple[list[Notification], str | None]:
        self._require_member(board_id, member_id)
        before = None
        if cursor is not None:
            if not re.fullmatch(r"\d{17}#[0-9a-f]{1,64}", cursor):
                raise ValidationError("cursor is not valid: pass the nextCursor of a previous page")
            before = cursor
        now_s = int(self.clock().timestamp())
        return self.store.list_notifications(board_id, member_id, limit, before, now_s)

    # -- rankings ---------------------------------------------------------------------

    def _partitions(self, board_id: str, settings: BoardSettings, period: str) -> list[str]:
        return [rank_partition_key(board_id, period, shard) for shard in range(settings.shards)]

    def _view(
        self,
        board_id: str,
        requested_period: str | None,
        *,
        member_id: str | None = None,
        head: bool = False,
    ) -> tuple[Board, str, int, View]:
        """The board, the period read, ``total`` (the board's memberCount, or on a
        time-windowed board the number of members with a score in that period), and what
        else the read asked for (the member's score, the head), in one BatchGetItem: the
        board's fixed settings are cached, so the period is known before the read."""
        period = self.period(self.board_settings(board_id), requested_period)
        view = self.store.view(board_id, period, member_id=member_id, head=head)
        if view.board is None:
            raise NotFound(f"board {board_id} does not exist")
        total = view.board.member_count if period == ALL_TIME else view.period_count
        return view.board, period, total, view

    def _count_below(self, partitions: list[str], bound: str) -> int:
        return sum(self.store.gather(lambda p: self.store.count_index(p, below=bound), partitions))

    def _count_better(
        self, board_id: str, settings: BoardSettings, period: str, bounds: list[str], total: int
    ) -> list[int]:
        """For each of the sorted bounds, how many index entries sort below it.

        On a board of up to ``COUNT_INDEX_UP_TO`` members the index is counted: that
        reads no more than the buckets would, and it shows a write at once. On a bigger
        board the score buckets answer (``podium.buckets``): the counts of the buckets
        above each bound, plus the index keys of its own bucket below it, each bucket read
        once on every shard however many bounds it holds (a COUNT when it holds one).
        Exact as of the changes the stream has applied."""
        partitions = self._partitions(board_id, settings, period)
        if total <= COUNT_INDEX_UP_TO:
            return self._count_below_naive(partitions, bounds)
        layout = self.store.list_buckets(board_id, period, upto=max(bounds))
        if not layout:
            return self._count_below_naive(partitions, bounds)
        # Reads of nearby buckets merge while the entries between them cost less than one
        # more round of shard queries wastes in rounding (half a read unit per query).
        plan = buckets.plan_counts(
            layout, bounds, merge_gap=len(partitions) * buckets.KEYS_PER_READ_UNIT // 2
        )
        tasks = [(partition, read) for read in range(len(plan.reads)) for partition in partitions]

        def read_range(task: tuple[str, int]) -> int | list[str]:
            partition, read = task
            lo, bound = plan.reads[read]
            if plan.serves[read] == 1 and not plan.spans[read]:
                return self.store.count_range(partition, lo, just_below(bound))
            return self.store.keys_in_range(partition, lo, just_below(bound))

        found: dict[int, list[int | list[str]]] = {}
        for (_, read), result in zip(tasks, self.store.gather(read_range, tasks), strict=True):
            found.setdefault(read, []).append(result)
        counts = []
        for bound, counted, within, start in zip(bounds, plan.counted, plan.within, plan.starts, strict=True):
            inside = 0
            for result in found.get(within, []) if within is not None else []:
                if isinstance(result, int):
                    inside += result
                else:  # only the part of the read in the bound's own bucket
                    inside += bisect_left(result, bound) - bisect_left(result, start)
            counts.append(counted + inside)
        return counts

    def _count_below_naive(self, partitions: list[str], bounds: list[str]) -> list[int]:
        """COUNT the index below each of the sorted ``bounds`` segment by segment (below
        the first, then between consecutive bounds), so the items read add up to the
        entries above the lowest bound, not to the sum of every count."""
        segments = [(None, bounds[0])] + [
            (bounds[i - 1], bounds[i]) for i in range(1, len(bounds)) if bounds[i] != bounds[i - 1]
        ]
        tasks = [(partition, segment) for segment in segments for partition in partitions]

        def count(task: tuple[str, tuple[str | None, str]]) -> int:
            partition, (low, high) = task
            return self.store.count_range(partition, low or "", just_below(high))

        counts = self.store.gather(count, tasks)
        in_segment: dict[str, int] = {}
        for (_, (_, high)), value in zip(tasks, counts, strict=True):
            in_segment[high] = in_segment.get(high, 0) + value
        result = []
        running = 0
        for index, bound in enumerate(bounds):
            if index == 0 or bound != bounds[index - 1]:
                running += in_segment[bound]
            result.append(running)
        return result

    def top(
        self,
        board_id: str,
        limit: int,
        cursor_text: str | None,
        with_data: bool,
        requested_period: str | None = None,
        consistent: bool = False,
    ) -> Page:
        """A page of the listing. A first page of up to 100 entries comes from the board's
        head (kept by the stream, lagging writes by about a second) unless ``consistent``.
        Every other page, and a head that cannot answer, reads the index exactly, in as
        few keys as the head's hint allows. The head is read in the same BatchGetItem as
        the board either way."""
        board, period, total, view = self._view(board_id, requested_period, head=True)
        settings = board.settings
        order = settings.rank_order
        scope = f"{board_id}#{period}"  # a cursor continues the listing it came from
        cursor = Cursor.decode(cursor_text, scope) if cursor_text is not None else None
        after = cursor.sort_key if cursor else None
        head = view.head
        if head is not None and not consistent and cursor is None:
            served = head.page(limit)
            if served is not None:
                head_keys, more = served
                return self._page(order, head_keys, more, scope, with_data, board_id, total)
        partitions = self._partitions(board_id, settings, period)
        hint = head.hint(after, limit) if head is not None else None
        if cursor is None:
            keys = self._gather_top(partitions, after, limit, hint)
            return self._page(order, keys[:limit], len(keys) > limit, scope, with_data, board_id, total)
        # The page's place in the listing is counted now, alongside the page's own read:
        # the entries before the cursor (and, for shared ranks, those strictly better than
        # its score) as the board stands, not as it stood when the cursor was made.
        try:
            cursor_score, _ = order.parse(cursor.sort_key)
        except (ValueError, IndexError) as error:
            raise ValidationError("cursor is not valid: pass the nextCursor of a previous page") from error
        bounds = [just_above(cursor.sort_key)]
        if not order.earliest:
            bounds.insert(0, order.score_bound(cursor_score))
        keys, counts = self._together(
            lambda: self._gather_top(partitions, after, limit, hint),
            lambda: self._count_before(board_id, settings, period, bounds, total, consistent=consistent),
        )
        before = Before(position=counts[-1], rank=counts[0], score=cursor_score)
        return self._page(order, keys[:limit], len(keys) > limit, scope, with_data, board_id, total, before)

    @overload
    def _together(self, first: Callable[[], A], second: Callable[[], B], /) -> tuple[A, B]: ...

    @overload
    def _together(
        self, first: Callable[[], A], second: Callable[[], B], third: Callable[[], C], /
    ) -> tuple[A, B, C]: ...

    def _together(self, first: Callable[[], Any], *others: Callable[[], Any]) -> tuple[Any, ...]:
        """Run reads at once (each may fan out to the shards on the store's pool)."""
        pending = [_side_pool().submit(other) for other in others]
        return (first(), *(future.result() for future in pending))

    def _count_before(
        self,
        board_id: str,
        settings: BoardSettings,
        period: str,
        bounds: list[str],
        total: int,
        *,
        consistent: bool,
    ) -> list[int]:
        """How many index entries sort below each of the sorted ``bounds``: counted in the
        index with ``consistent``, else as ``rank`` counts (``_count_better``)."""
        if consistent:
            return self._count_below_naive(self._partitions(board_id, settings, period), bounds)
        return self._count_better(board_id, settings, period, bounds, total)

    def _gather_top(
        self, partitions: list[str], after: str | None, limit: int, hint: Hint | None
    ) -> list[str]:
        """The best ``limit`` index keys after ``after``, exactly, then one more key when
        the listing goes on (only its existence matters: it is not necessarily the next).
        Every shard's query stops at the head's hint, so a read costs about the keys it
        needs, in one round of parallel queries at least 95% of the time and two at most
        (``ranking.gather_top``); what it cost is kept in ``last_top_stats``."""

        read = self.store.page_reader(partitions)
        keys, self.last_top_stats = gather_top(read, len(partitions), after, limit, hint)
        return keys

    def _page(
        self,
        order: RankOrder,
        keys: list[str],
        more: bool,
        scope: str,
        with_data: bool,
        board_id: str,
        total: int,
        before: Before | None = None,
    ) -> Page:
        """The listing entries for consecutive ``keys``, ranked: from the top, or after
        ``before``'s count of entries."""
        entries = decode(order, keys)
        previous = None
        first_position = 1
        if before is not None:
            first_position = before.position + 1
            # An entry that shares the cursor's score shares the rank of that score.
            previous = (before.score, before.rank + 1)
        ranked = assign_ranks(
            entries, earliest=order.earliest, first_position=first_position, previous=previous
        )
        if with_data:
            ranked = self._with_data(board_id, ranked)
        next_cursor = None
        if more and ranked:
            next_cursor = Cursor(scope, entries[-1].sort_key).encode()
        return Page(entries=ranked, total=total, next_cursor=next_cursor)

    def _with_data(self, board_id: str, entries: list[RankedEntry]) -> list[RankedEntry]:
        data = self.store.get_data(board_id, [entry.member_id for entry in entries])
        return [
            RankedEntry(entry.rank, entry.member_id, entry.score, data.get(entry.member_id, {}))
            for entry in entries
        ]

    def _member_entry(
        self, board_id: str, settings: BoardSettings, member_id: str, period: str
    ) -> IndexEntry:
        return self._entry_of(
            board_id, settings, member_id, period, self.store.get_score(board_id, member_id, period)
        )

    def _entry_of(
        self, board_id: str, settings: BoardSettings, member_id: str, period: str, state: ScoreState | None
    ) -> IndexEntry:
        if state is None:
            if period == ALL_TIME:
                raise NotFound(f"member {member_id} does not exist on board {board_id}")
            raise NotFound(f"member {member_id} has no score in period {period} of board {board_id}")
        key = settings.rank_order.sort_key(state.score, member_id, state.reached_at_us)
        return IndexEntry(sort_key=key, member_id=member_id, score=state.score)

    def rank(
        self, board_id: str, member_id: str, requested_period: str | None = None, consistent: bool = False
    ) -> dict[str, Any]:
        """1 + the members better than this one: from the score buckets in at most three
        round trips (the board and score; the buckets above; one COUNT inside a bucket),
        or with ``consistent`` by counting every index entry above."""
        board, period, total, view = self._view(board_id, requested_period, member_id=member_id)
        settings = board.settings
        order = settings.rank_order
        entry = self._entry_of(board_id, settings, member_id, period, view.score)
        bound = entry.sort_key if order.earliest else order.score_bound(entry.score)
        if consistent:
            better = self._count_below(self._partitions(board_id, settings, period), bound)
        else:
            better = self._count_better(board_id, settings, period, [bound], total)[0]
        return {"memberId": member_id, "score": entry.score, "rank": better + 1, "total": total}

    def around(self, board_id: str, member_id: str, radius: int, requested_period: str | None = None) -> Page:
        """The ``2·radius + 1`` entries of the listing around the member, shifted to stay
        full at either end. The nearest keys above and below are gathered exactly, each
        side as a top read gathers (``ranking.gather_top``, the upper side on the listing
        read bottom-up), side by side with the member's position and rank, counted as
        ``rank`` counts; a second round reads what the window still lacks at an end, and
        one more count is needed only when the window opens inside a tie that starts above
        it."""
        board, period, total, view = self._view(board_id, requested_period, member_id=member_id)
        settings = board.settings
        order = settings.rank_order
        me = self._entry_of(board_id, settings, member_id, period, view.score)
        partitions = self._partitions(board_id, settings, period)
        bounds = [me.sort_key] if order.earliest else [order.score_bound(me.score), me.sort_key]
        above, below, counts = self._together(
            lambda: self._nearest(partitions, me.sort_key, radius + 1, above=True),
            lambda: self._nearest(partitions, me.sort_key, radius, above=False),
            lambda: self._count_better(board_id, settings, period, bounds, total),
        )
        # At an end of the board the window takes more from the other side: up to 2·radius,
        # and above one more, to see whether the window's first entry opens a tie.
        # (A side that came back with its witness, one key past its limit, goes on.)
        wanted_above = 2 * radius - len(below) + 1
        wanted_below = 2 * radius - len(above)
        if len(below) < radius and len(above) == radius + 2 and wanted_above > len(above):
            above = self._nearest(partitions, me.sort_key, wanted_above, above=True)
        elif len(above) < radius and len(below) == radius + 1 and wanted_below > len(below):
            below = self._nearest(partitions, me.sort_key, wanted_below, above=False)
        take_above, take_below = around_window(list(reversed(above)), below, radius)
        window = decode(order, [*reversed(above[:take_above]), me.sort_key, *below[:take_below]])
        first = window[0]
        previous = None
        if not order.earliest:
            my_rank = counts[0] + 1
            if first.score == me.score:
                previous = (me.score, my_rank)
            elif take_above < len(above) and order.parse(above[take_above])[0] == first.score:
                better = self._count_better(
                    board_id, settings, period, [order.score_bound(first.score)], total
                )
                previous = (first.score, better[0] + 1)
        ranked = assign_ranks(
            window, earliest=order.earliest, first_position=counts[-1] + 1 - take_above, previous=previous
        )
        return Page(entries=ranked, total=total)

    def _nearest(self, partitions: list[str], key: str, limit: int, *, above: bool) -> list[str]:
        """The ``limit`` index keys nearest ``key`` on one side, nearest first, exactly, and
        one more when the side goes on."""
        if limit <= 0:
            return []
        if not above:
            keys, _ = gather_top(self.store.page_reader(partitions), len(partitions), key, limit)
            return keys
        read = self.store.page_reader(partitions, reverse=True)
        keys, _ = gather_top(read, len(partitions), mirror(key), limit)
        return [unmirror(k) for k in keys]

    def ranks(
        self, board_id: str, member_ids: list[str], requested_period: str | None = None
    ) -> list[RankedEntry]:
        """Board-wide ranks of several members, in listing order (``_count_better``)."""
        board, period, total, _ = self._view(board_id, requested_period)
        settings = board.settings
        order = settings.rank_order
        states = self.store.get_scores(board_id, member_ids, period)
        entries = sorted(
            (IndexEntry(order.sort_key(s.score, m, s.reached_at_us), m, s.score) for m, s in states.items()),
            key=lambda e: e.sort_key,
        )
        if not entries:
            return []
        bounds = [e.sort_key if order.earliest else order.score_bound(e.score) for e in entries]
        better = self._count_better(board_id, settings, period, bounds, total)
        return [
            RankedEntry(rank=count + 1, member_id=entry.member_id, score=entry.score)
            for entry, count in zip(entries, better, strict=True)
        ]

    def finish_splits(self, board_id: str) -> int:
        """Finish the splits of the board's score buckets (current period) that have
        settled and that no stream record has come to finish (the scheduled job's upkeep,
        for boards that went quiet); how many were finished."""
        from podium.upkeep import Upkeep

        period = self.period(self.board_settings(board_id))
        return Upkeep(self.store, self.board_settings, self.clock).finish_splits(board_id, period)

    def rebuild_rank_structures(self, board_id: str, requested_period: str | None = None) -> int:
        """Rebuild the board's head and score buckets from the index (maintenance: a board
        whose scores were bulk-loaded); the number of buckets."""
        from podium.upkeep import Upkeep

        period = self.period(self.board_settings(board_id), requested_period)
        return Upkeep(self.store, self.board_settings, self.clock).rebuild(board_id, period)


@cache
def default_service() -> LeaderboardService:
    return LeaderboardService(default_store())
