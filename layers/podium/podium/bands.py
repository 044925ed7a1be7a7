"""Score bands: ``GET /boards/{boardId}/scores?min=&max=``, the members whose score lies
between two bounds, in listing order, each with its board-wide rank.

A band is a stretch of the listing, because the index's sort key begins with the score
(``keys.RankOrder``): its entries are exactly the keys from the bound of its better end
(``score_bound``: every better score sorts below it) up to that of its worse end
(``score_end``: every equal or better score sorts below it). So a page of a band costs
what a page of ``top`` costs at the same depth: one count of the entries above the band's
start (the count tree's path on a big board, ``indexreads.Counting``), which ranks the
first entry, beside one gather of ``limit`` keys from that start (``ranking.gather_top``,
every shard's query stopped at the band's end); the other ranks follow from the first as
a page of ``top`` ranks its entries. A page after a cursor counts the entries before the
cursor instead, as ``top`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal

from podium import cursors, fanout, numbers
from podium.fanout import together
from podium.indexreads import read_keys
from podium.keys import RankOrder, just_below
from podium.models import Page
from podium.ports import IndexReader
from podium.ranking import PageRequest, gather_top
from podium.reads import SORT_KEY, Before, Read, ReadService, cursor_bounds
from podium.values import frozen


@frozen
class Band:
    """The scores asked for, each end optional (None: open) and inclusive."""

    least: Decimal | None = None
    most: Decimal | None = None

    def ends(self, order: RankOrder) -> tuple[Decimal | None, Decimal | None]:
        """The band's score at the start of the listing and at its end: better first."""
        return (self.most, self.least) if order.descending else (self.least, self.most)

    def name(self) -> str:
        """The band as a cursor's scope names it: ``82.3`` and ``82.30`` are one band."""
        spelled = (numbers.format_number(end) if end is not None else "" for end in (self.least, self.most))
        return "..".join(spelled)


def band_reader(
    index: IndexReader, partitions: Sequence[str], end: str | None
) -> Callable[[Sequence[PageRequest]], list[list[str]]]:
    """Reads one round of ``gather_top``'s page requests in parallel, every query stopped
    at ``end`` (exclusive) too: to ``gather_top`` the shards then hold the band's keys and
    nothing past it, so it gathers the band's first keys exactly, and a shard whose band
    is read to its end is exhausted."""

    def page(r: PageRequest) -> list[str]:
        below = r.below if end is None or (r.below is not None and r.below < end) else end
        return read_keys(index, partitions[r.shard], r.after, below, r.limit)

    return lambda requests: fanout.gather(page, requests)


class ScoreBands:
    """Pages of a band, read through the rankings' own reads (``reads.ReadService``): the
    board's view, its counts and its page of ranked entries."""

    def __init__(self, reads: ReadService) -> None:
        self.reads = reads

    def scores(
        self, board_id: str, band: Band, limit: int, cursor: str | None, requested_period: str | None = None
    ) -> Page:
        """A page of the band's entries in listing order, with board-wide ranks (shared or
        earliest, as ``top`` ranks), and a cursor that continues it within the band."""
        read = self.reads._read(board_id, requested_period)
        order = read.order
        first, last = band.ends(order)
        end = order.score_end(last) if last is not None else None
        read_band = band_reader(self.reads.index, read.partitions, end)
        shards = len(read.partitions)
        # A cursor continues this band of this listing only (another band's would skip or repeat).
        scope = f"{board_id}#{read.period}#scores#{band.name()}"
        if cursor is not None:
            after = cursors.decode(cursor, scope, SORT_KEY)
            (found, _), before = together(
                lambda: gather_top(read_band, shards, after, limit), lambda: self._before_cursor(read, after)
            )
        elif first is None:  # the band starts at the top of the listing: nothing is above it
            found, _ = gather_top(read_band, shards, None, limit)
            before = None
        else:
            start = order.score_bound(first)
            (found, _), counted = together(
                lambda: gather_top(read_band, shards, just_below(start), limit),
                lambda: self.reads._count(read, [start]),
            )
            # Every entry above the start has a better score than any in the band, so the
            # first entry's position is one past them, and so is its rank: with shared
            # ranks an entry of the start's score ties with none above it.
            above = counted.counts[0]
            before = Before(position=above, rank=above, score=first)
        return self.reads._page(read, scope, found[:limit], len(found) > limit, False, None, before)

    def _before_cursor(self, read: Read, after: str) -> Before:
        """What precedes a page after ``after``, counted as a page of ``top`` counts it: the
        entries up to the cursor's key, and those strictly better than its score."""
        cursor_score, bounds = cursor_bounds(read.order, after)
        counts = self.reads._count(read, bounds).counts
        return Before(position=counts[-1], rank=counts[0], score=cursor_score)
