"""The rankings: a page of the listing (``top``), one member's rank, the window around a
member, and the ranks of several members. Every rank is board-wide and counted when the
read is made (``podium.indexreads``); docs/performance.md has what each costs."""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import ROUND_CEILING, Decimal
from typing import Any

from podium import cost, cursors, keys, numbers
from podium import head as heads
from podium.boards import BoardService
from podium.errors import NotFound, ValidationError
from podium.fanout import together
from podium.indexreads import Counted, Counting, listing_near, top_keys
from podium.keys import RankOrder, just_above
from podium.models import Board, HeadItem, IndexEntry, Page, RankedEntry, ScoreState, View
from podium.periods import ALL_TIME
from podium.ports import BoardStore, IndexReader, MemberStore, TreeStore
from podium.ranking import TopStats, around_window, assign_ranks, decode
from podium.recent import HEAD_KEEP_SECONDS, Recent
from podium.treereads import TreeReader
from podium.validation import MAX_DATA_BYTES
from podium.values import frozen

HUNDREDTH = Decimal("0.01")
# A page with data stays under 5 MiB (API Gateway and Lambda answer at most 6 MB); the
# envelope (boardId, total, nextCursor) takes far less than its allowance.
MAX_PAGE_BYTES = 5 * 1024 * 1024
PAGE_ENVELOPE_BYTES = 16 * 1024
MAX_DATA_CHUNK = 100  # keys in one BatchGetItem
# A profile item holds its data (at most 64 KiB of JSON text) besides its keys, names and
# times (a 128-character board id and a 200-character member id take under 1 KiB with them):
# a read of one is billed at most this, eventually consistent (17 blocks: 8.5 RCU).
PROFILE_FIXED_BYTES = 128
PROFILE_OVERHEAD_BYTES = 1024  # a profile item besides its data, at most (keys, dates)


def profile_units(largest_data: int) -> float:
    """What reading one profile can cost at most, on a board whose largest data is
    ``largest_data`` bytes."""
    data = min(largest_data, MAX_DATA_BYTES)
    return cost.units(data + PROFILE_OVERHEAD_BYTES)


MAX_DATA_ROUNDS = 10  # BatchGetItems one page with data sends, one after the other
# The board, the period's count, the member's score and the head, read in one BatchGetItem:
# a few small items and a head of a few KB (12 KB with ids of 64 characters; docs/performance.md).
VIEW_UNITS = 4.0
SORT_KEY = re.compile(r"[!-~]{1,600}")  # printable ASCII, as sort keys are


@frozen
class Before:
    """What precedes a page that continues after a cursor, counted when the page is read:
    ``position`` entries sort at or before the cursor's key, ``rank`` of them have a score
    strictly better than the cursor's ``score`` (for shared ranks)."""

    position: int
    rank: int
    score: Decimal


@frozen
class Read:
    """What a ranking read knows before it touches the index."""

    board: Board
    period: str
    total: int  # memberCount, or on a time-windowed board the members with a score in the period
    view: View

    @property
    def order(self) -> RankOrder:
        return keys.order_of(self.board.settings)

    @property
    def partitions(self) -> list[str]:
        return keys.partitions(self.board.board_id, self.board.settings, self.period)


@frozen
class TopRead:
    """A page of the listing and what its read of the index cost (None: the head served it)."""

    page: Page
    stats: TopStats | None = None


def at_least(total: int, position: int) -> int:
    """``total`` as answered: the board's count, which may lag writes by a few seconds, but
    never fewer than the members the answer itself shows to be there (the last position it
    lists), so that no one is told "4th of 3"."""
    return max(total, position)


def top_percent(rank: int, total: int) -> Decimal:
    """``100 * rank / total`` rounded up to two decimals (rank 1 of 1,539 is 0.07; the last
    member is 100). ``total`` may lag writes by a few seconds: a rank past it counts as last."""
    share = (Decimal(100 * rank) / Decimal(max(total, rank))).quantize(HUNDREDTH, rounding=ROUND_CEILING)
    return share.quantize(Decimal(1)) if share == share.to_integral_value() else share


class ReadService:
    def __init__(
        self,
        boards: BoardService,
        board_store: BoardStore,
        members: MemberStore,
        index: IndexReader,
        tree: TreeStore,
        keep_seconds: float = 0,
    ) -> None:
        self.boards = boards
        self.board_store = board_store
        self.members = members
        self.index = index
        # One reader for the process: it keeps the trees' shapes it has seen, and each
        # tree's root for ``keep_seconds``.
        self.counting = Counting(index, TreeReader(tree, root_seconds=keep_seconds))
        # What every read of a board reads first (the board, the count), kept for
        # ``keep_seconds``, and the head for at most HEAD_KEEP_SECONDS (podium.recent), each
        # on its own: a top read that finds the board still kept reads the head alone, from
        # this process's copy of it, off the board's partition (docs/capacity.md, "Hot boards").
        self._views: Recent[tuple[str, str], View] = Recent(keep_seconds)
        self._heads: Recent[tuple[str, str], tuple[HeadItem | None]] = Recent(
            min(keep_seconds, HEAD_KEEP_SECONDS)
        )

    def _read(
        self, board_id: str, requested_period: str | None, *, member_id: str | None = None, head: bool = False
    ) -> Read:
        """The board, the period read and ``total``, and what else the read asked for (the
        member's score, the head), in one BatchGetItem: the board's fixed settings are
        cached, so the period is known before the read. The board and count are kept for
        ``keep_seconds`` and the head for at most HEAD_KEEP_SECONDS: a rank then reads
        only the member's score, and a top only the head while the board is kept."""
        period = self.boards.period(self.boards.settings(board_id), requested_period)
        key = (board_id, period)
        kept = self._views.get(key)
        kept_head = self._heads.get(key) if head else None
        if kept is not None:
            score = self.members.get_score(board_id, member_id, period) if member_id is not None else None
            if head and kept_head is None:
                kept_head = self._heads.keep(key, (self.board_store.head(board_id, period),))
            view = replace(kept, score=score, head=kept_head[0] if kept_head is not None else None)
        else:
            view = self.board_store.view(
                board_id, period, with_count=period != ALL_TIME, member_id=member_id, head=head
            )
            if view.board is None:
                raise NotFound(f"board {board_id} does not exist")
            self._views.keep(key, replace(view, score=None, head=None))
            if head:
                self._heads.keep(key, (view.head,))
        assert view.board is not None  # none is kept
        total = view.board.member_count if period == ALL_TIME else view.period_count
        # The board item just read says which index to read (a re-shard switches it).
        return Read(view.board, period, total, view)

    def _count(
        self, read: Read, bounds: list[str], *, consistent: bool = False, budget: float | None = None
    ) -> Counted:
        return self.counting.below(
            read.board,
            read.period,
            read.partitions,
            bounds,
            read.total,
            consistent=consistent,
            budget=budget,
        )

    # -- top ------------------------------------------------------------------------------

    def top(
        self,
        board_id: str,
        limit: int,
        cursor: str | None,
        with_data: bool,
        requested_period: str | None = None,
        consistent: bool = False,
    ) -> Page:
        """A page of the listing (``top_read``)."""
        return self.top_read(board_id, limit, cursor, with_data, requested_period, consistent).page

    def top_read(
        self,
        board_id: str,
        limit: int,
        cursor: str | None,
        with_data: bool,
        requested_period: str | None = None,
        consistent: bool = False,
    ) -> TopRead:
        """A page of the listing. A first page of up to 100 entries comes from the board's
        head (kept by the stream, lagging writes by about a second) unless ``consistent``.
        Every other page, and a head that cannot answer, reads the index exactly, in as
        few keys as the head's hint allows. The head is read in the same BatchGetItem as
        the board either way; what the index read cost comes with the page."""
        read = self._read(board_id, requested_period, head=True)
        scope = f"{board_id}#{read.period}"  # a cursor continues the listing it came from
        after = cursors.decode(cursor, scope, SORT_KEY) if cursor is not None else None
        head = heads.read(read.view.head) if read.view.head is not None else None
        if head is not None and not consistent and after is None:
            served = head.page(limit)
            if served is not None:
                return TopRead(self._page(read, scope, *served, with_data, cost.READ_BOUND - VIEW_UNITS))
        hint = head.hint(after, limit) if head is not None else None
        if after is None:
            found, stats = top_keys(self.index, read.partitions, None, limit, hint)
            left = cost.READ_BOUND - VIEW_UNITS - self._spent(read, found, stats)
            return TopRead(self._page(read, scope, found[:limit], len(found) > limit, with_data, left), stats)
        # The page's place in the listing is counted now, alongside the page's own read:
        # the entries before the cursor (and, for shared ranks, those strictly better than
        # its score) as the board stands, not as it stood when the cursor was made.
        cursor_score, bounds = cursor_bounds(read.order, after)
        # The count runs beside the page's read: it may spend what the page's read may not.
        shards = len(read.partitions)
        entry = cost.entry_bytes(read.board.board_id, read.period, read.partitions[0], [after])
        page_at_most = cost.upper_units(2 * shards, (1.5 * limit + 2 * shards) * entry)
        (found, stats), counted = together(
            lambda: top_keys(self.index, read.partitions, after, limit, hint),
            lambda: self._count(
                read, bounds, consistent=consistent, budget=cost.READ_BOUND - VIEW_UNITS - page_at_most
            ),
        )
        counts = counted.counts
        before = Before(position=counts[-1], rank=counts[0], score=cursor_score)
        left = cost.READ_BOUND - VIEW_UNITS - self._spent(read, found, stats) - counted.units
        page = self._page(read, scope, found[:limit], len(found) > limit, with_data, left, before)
        return TopRead(page, stats)

    @staticmethod
    def _spent(read: Read, found: list[str], stats: TopStats) -> float:
        """At most what a top read of the index cost, from the keys it read."""
        entry = cost.entry_bytes(read.board.board_id, read.period, read.partitions[0], found[:64])
        return cost.upper_units(stats.queries, stats.items * entry)

    def _page(
        self,
        read: Read,
        scope: str,
        found: list[str],
        more: bool,
        with_data: bool,
        budget: float | None = None,
        before: Before | None = None,
    ) -> Page:
        """The listing entries for consecutive keys, ranked: from the top, or after
        ``before``'s count of entries."""
        order = read.order
        entries = decode(order, found)
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
            left = cost.READ_BOUND - VIEW_UNITS if budget is None else budget
            ranked = self._with_data(read.board, ranked, left)
            if len(ranked) < len(entries):  # the body's or the reads' limit: the next page goes on from here
                entries, more = entries[: len(ranked)], True
        next_cursor = cursors.encode(scope, entries[-1].sort_key) if more and entries else None
        total = at_least(read.total, first_position + len(ranked) - 1)
        return Page(entries=ranked, total=total, next_cursor=next_cursor)

    def _with_data(self, board: Board, ranked: list[RankedEntry], budget: float) -> list[RankedEntry]:
        """The entries with their members' data, as many as fit in a body of
        ``MAX_PAGE_BYTES`` and in ``budget`` read units. A profile's size is known only once
        it is read, so each BatchGetItem asks for no more profiles than ``budget`` still
        covers if every one were as big as the board's largest data (``largestData``, kept
        by every write of data): on a board of small data, 100 profiles a read (half a unit
        each), and a page of 1,000 in ten reads; on a board that holds 64 KiB of data
        somewhere, 57 profiles for a budget of about 490, and the page goes on in a few
        more reads (``MAX_DATA_ROUNDS`` at most), or stops when the body is full. A page
        holds one entry at the least, so that the listing goes on."""
        board_id = board.board_id
        at_most = profile_units(board.largest_data)
        out: list[RankedEntry] = []
        used, left = 0, budget
        for _ in range(MAX_DATA_ROUNDS):
            if len(out) == len(ranked):
                break
            room = MAX_PAGE_BYTES - PAGE_ENVELOPE_BYTES - used
            by_body = room * len(out) // max(used, 1) if out else MAX_DATA_CHUNK
            chunk = min(MAX_DATA_CHUNK, int(left // at_most), max(1, by_body))
            if chunk < 1:
                if out:
                    break
                chunk = 1
            part = ranked[len(out) : len(out) + chunk]
            data = self.members.get_data(board_id, [entry.member_id for entry in part])
            for entry in part:
                text = numbers.dumps(data.get(entry.member_id, {}))
                left -= cost.units(len(text) + PROFILE_FIXED_BYTES + len(board_id) + len(entry.member_id))
            for entry in part:
                full = RankedEntry(entry.rank, entry.member_id, entry.score, data.get(entry.member_id, {}))
                size = len(numbers.dumps(full.to_json()).encode("utf-8")) + 1
                if out and used + size > MAX_PAGE_BYTES - PAGE_ENVELOPE_BYTES:
                    return out
                out.append(full)
                used += size
        return out

    # -- one member, a window, several members ---------------------------------------------

    def _entry(
        self, read: Read, member_id: str, state: ScoreState | None, reveal_hidden: bool = True
    ) -> IndexEntry:
        """The member's index entry, or 404. Whether a member is hidden is told to admins
        only (``reveal_hidden``): to anyone else a hidden member is 404 word for word as one
        that does not exist (or has no score in the period read)."""
        if state is not None and state.hidden and not reveal_hidden:
            state = None
        if state is None:
            if read.period == ALL_TIME:
                raise NotFound(f"member {member_id} does not exist on board {read.board.board_id}")
            raise NotFound(
                f"member {member_id} has no score in period {read.period} of board {read.board.board_id}"
            )
        if state.hidden:
            raise NotFound(f"member {member_id} is hidden on board {read.board.board_id}: it has no rank")
        return IndexEntry(
            read.order.sort_key(state.score, member_id, state.reached_at_us), member_id, state.score
        )

    def rank(
        self,
        board_id: str,
        member_id: str,
        requested_period: str | None = None,
        consistent: bool = False,
        reveal_hidden: bool = True,
    ) -> dict[str, Any]:
        """1 + the members better than this one, in two round trips: the board and score,
        then the count tree's path to the member's key (or, on a small board, a COUNT of
        the index above it); with ``consistent``, by counting every index entry above while
        the budget allows (``indexreads.Counting``)."""
        read = self._read(board_id, requested_period, member_id=member_id)
        order = read.order
        entry = self._entry(read, member_id, read.view.score, reveal_hidden)
        bound = entry.sort_key if order.earliest else order.score_bound(entry.score)
        better = self._count(
            read, [bound], consistent=consistent, budget=cost.READ_BOUND - VIEW_UNITS
        ).counts[0]
        rank = better + 1
        return {
            "memberId": member_id,
            "score": entry.score,
            "rank": rank,
            "total": at_least(read.total, rank),
            "topPercent": top_percent(rank, read.total),
        }

    def around(
        self,
        board_id: str,
        member_id: str,
        radius: int,
        requested_period: str | None = None,
        reveal_hidden: bool = True,
    ) -> Page:
        """The ``2·radius + 1`` entries of the listing around the member, shifted to stay
        full at either end, with exact ranks: the member's position is counted as ``rank``
        counts, beside the reads of the keys next to it (``indexreads.listing_near`` has
        the reads). The first entry's rank is its position unless it shares a score
        with an entry before it: the keys read above tell that tie's start, and only a
        tie that starts above all of them needs one more count."""
        read = self._read(board_id, requested_period, member_id=member_id)
        order = read.order
        me = self._entry(read, member_id, read.view.score, reveal_hidden)
        near = listing_near(
            self.counting, read.board, read.period, read.partitions, me.sort_key, read.total, radius
        )
        above = near.above.keys
        take_above, take_below = around_window(above, near.below, radius)
        window = decode(order, [*above[len(above) - take_above :], me.sort_key, *near.below[:take_below]])
        first_position = near.position + 1 - take_above
        previous = None
        if not order.earliest:
            first = window[0]
            bound = order.score_bound(first.score)
            if near.above.covers(bound):
                better = near.position - near.above.at_or_after(bound)
            else:
                better = self._count(read, [bound]).counts[0]
            previous = (first.score, better + 1)
        ranked = assign_ranks(
            window, earliest=order.earliest, first_position=first_position, previous=previous
        )
        return Page(entries=ranked, total=at_least(read.total, first_position + len(ranked) - 1))

    def ranks(
        self, board_id: str, member_ids: list[str], requested_period: str | None = None
    ) -> list[RankedEntry]:
        """Board-wide ranks of several members, in listing order."""
        read = self._read(board_id, requested_period)
        order = read.order
        states = self.members.get_scores(board_id, member_ids, read.period)
        # A hidden member is left out, as an unknown id is.
        shown = ((m, s) for m, s in states.items() if not s.hidden)
        entries = sorted((self._entry(read, m, s) for m, s in shown), key=lambda e: e.sort_key)
        if not entries:
            return []
        bounds = [e.sort_key if order.earliest else order.score_bound(e.score) for e in entries]
        better = self._count(read, bounds).counts
        return [
            RankedEntry(rank=count + 1, member_id=entry.member_id, score=entry.score)
            for entry, count in zip(entries, better, strict=True)
        ]


def cursor_bounds(order: RankOrder, after: str) -> tuple[Decimal, list[str]]:
    """What a page after the cursor key ``after`` counts to know its place: the score at the
    cursor, and the bounds to count below: the entries strictly better than that score (for
    shared ranks: the page's first rank) and every entry up to the cursor (its position)."""
    try:
        cursor_score, _ = order.parse(after)
    except (ValueError, IndexError) as error:
        raise ValidationError(cursors.INVALID) from error
    bounds = [just_above(after)]
    if not order.earliest:
        bounds.insert(0, order.score_bound(cursor_score))
    return cursor_score, bounds
