"""Reading the sharded ranking index: pages for ``ranking.gather_top`` (from the top, or
from the bottom up in mirrored keys), the nearest keys on either side of one, counts of
the entries below some bounds (the index counted, or the score buckets and one read
inside a bucket, ``podium.buckets``), and the listing next to one key for ``around``."""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from podium import buckets, cost, fanout
from podium.buckets import just_above, just_below
from podium.keys import mirror, unmirror
from podium.ports import IndexReader, StructureStore
from podium.ranking import Hint, PageRequest, TopStats, gather_top

# Up to this many members a rank counts the index (a few RCU, and fresh at once); above
# it the score buckets bound the cost whatever the board's size (podium.buckets).
COUNT_INDEX_UP_TO = 2 * buckets.SPLIT_AT
# A bucket item's names, numbers and fixed key parts, besides its board, period and lower key.
BUCKET_ITEM_BYTES = 64


def read_keys(
    index: IndexReader,
    partition: str,
    after: str | None,
    below: str | None,
    limit: int,
    *,
    reverse: bool = False,
) -> list[str]:
    """Up to ``limit`` keys of one shard in reading order, strictly past ``after`` and short
    of ``below`` (with ``reverse``, ``after`` is the upper end and ``below`` the lower);
    bounds just inside the open range, so that neither end is read."""
    lo, hi = (below, after) if reverse else (after, below)
    return index.keys_in_range(
        partition,
        just_above(lo) if lo is not None else None,
        just_below(hi) if hi is not None else None,
        limit=limit,
        reverse=reverse,
    )


def page_reader(
    index: IndexReader, partitions: Sequence[str], *, reverse: bool = False
) -> Callable[[Sequence[PageRequest]], list[list[str]]]:
    """Reads one round of ``gather_top``'s page requests, in parallel. With ``reverse`` the
    listing is read from the bottom up, in mirrored keys (``keys.mirror``), so that
    ``gather_top`` gathers the nearest keys above one."""

    def page(r: PageRequest) -> list[str]:
        if not reverse:
            return read_keys(index, partitions[r.shard], r.after, r.below, r.limit)
        after = unmirror(r.after) if r.after is not None else None
        below = unmirror(r.below) if r.below is not None else None
        return [mirror(k) for k in read_keys(index, partitions[r.shard], after, below, r.limit, reverse=True)]

    return lambda requests: fanout.gather(page, requests)


def top_keys(
    index: IndexReader, partitions: Sequence[str], after: str | None, limit: int, hint: Hint | None = None
) -> tuple[list[str], TopStats]:
    """The best ``limit`` keys after ``after`` exactly, and one more when the listing goes
    on; every shard's query stops at the head's hint (``ranking.gather_top``)."""
    return gather_top(page_reader(index, partitions), len(partitions), after, limit, hint)


def nearest(index: IndexReader, partitions: Sequence[str], key: str, limit: int, *, above: bool) -> list[str]:
    """The ``limit`` index keys nearest ``key`` on one side, nearest first, exactly, and one
    more when the side goes on."""
    if limit <= 0:
        return []
    if not above:
        return top_keys(index, partitions, key, limit)[0]
    keys, _ = gather_top(page_reader(index, partitions, reverse=True), len(partitions), mirror(key), limit)
    return [unmirror(k) for k in keys]


def whole_listing(index: IndexReader, partitions: Sequence[str], most: int) -> list[str] | None:
    """Every key of the listing, sorted, in one query on every shard; None when a shard
    holds more than ``most`` (the board is bigger than its count said: it was not read)."""
    pages = fanout.gather(lambda p: index.keys_in_range(p, None, None, limit=most + 1), partitions)
    if any(len(page) > most for page in pages):
        return None
    return list(heapq.merge(*pages))


@dataclass(frozen=True)
class Seen:
    """Index keys read in full up to some key: every key from ``start`` (inclusive; None:
    the top of the listing) up to that key, sorted."""

    start: str | None
    keys: list[str]

    def covers(self, key: str) -> bool:
        """Whether every key from ``key`` up is among ``keys``."""
        return self.start is None or self.start <= key

    def at_or_after(self, key: str) -> int:
        """How many of ``keys`` sort at or after ``key`` (all there are, when ``covers(key)``)."""
        return len(self.keys) - bisect_left(self.keys, key)


@dataclass(frozen=True)
class Counted:
    """How many index entries sort below each bound, and what counting them read (read
    units, estimated from the entries read: ``podium.cost``); with ``keep``, the keys the
    count read just above the greatest bound (``Seen``)."""

    counts: list[int]
    units: float
    seen: Seen | None = None


class Counting:
    """How many index entries sort below each of some sorted bounds, in the cheapest exact
    way the board's score buckets allow."""

    def __init__(self, index: IndexReader, structures: StructureStore) -> None:
        self.index = index
        self.structures = structures

    def below(
        self,
        board_id: str,
        period: str,
        partitions: list[str],
        bounds: list[str],
        total: int,
        *,
        consistent: bool = False,
        budget: float | None = None,
        keep: bool = False,
    ) -> Counted:
        """Two exact ways, the cheaper taken:

        - **the index from the top**: every entry up to the greatest bound, once, on every
          shard (a COUNT for one bound; the keys, counted against each bound, for several).
          It shows a write at once. A board of up to ``COUNT_INDEX_UP_TO`` members is
          always counted so: it reads no more than the buckets would.
        - **the score buckets**: the counts of the buckets above each bound, plus the index
          entries of its own bucket below it, the buckets that hold bounds read in the
          groups that cost least (``buckets.plan_counts``). Exact as of the changes the
          stream has applied, however deep the bounds.

        ``consistent`` asks for the index itself: it is counted from the top while that
        is expected to read no more than ``budget`` read units (``cost.READ_BOUND`` unless
        given); past that (a member deep in a big board) the buckets answer, read with
        ``ConsistentRead`` so that every change the stream has applied counts.

        ``keep`` reads the keys below the greatest bound rather than a COUNT of them (they
        cost the same) and keeps them: the index from the top has every key above that
        bound, a bucket every key from its start (``Counted.seen``)."""
        shards = len(partitions)
        entry = cost.entry_bytes(board_id, period, partitions[0], bounds)
        if total <= COUNT_INDEX_UP_TO:
            return self.from_top(partitions, bounds, entry, keep=keep)
        layout = self.structures.list_buckets(board_id, period, upto=max(bounds), consistent=consistent)
        if not layout:  # a board whose buckets were never built
            return self.from_top(partitions, bounds, entry, keep=keep)
        listed = cost.units(
            sum(BUCKET_ITEM_BYTES + len(board_id) + len(period) + len(b.lo) for b in layout),
            consistent=consistent,
        )

        def read_cost(entries: float) -> float:
            return cost.spread_units(entries, shards, entry)

        plan = buckets.plan_counts(layout, bounds, read_cost)
        last = buckets.locate(layout, max(bounds))
        from_top = read_cost(sum(b.count for b in layout[: last + 1]))
        budget = cost.READ_BOUND if budget is None else budget
        if (consistent and listed + from_top <= budget) or from_top <= plan.units:
            counted = self.from_top(partitions, bounds, entry, keep=keep)
            return Counted(counted.counts, listed + counted.units, counted.seen)
        return self.in_buckets(plan, partitions, bounds, entry, listed, keep=keep)

    def in_buckets(
        self,
        plan: buckets.CountPlan,
        partitions: list[str],
        bounds: list[str],
        entry: float,
        listed: float,
        *,
        keep: bool = False,
    ) -> Counted:
        """Carry out a plan: each read on every shard at once (a COUNT when it serves one
        bound in one bucket, else the keys, counted against each bound it serves; with
        ``keep``, the keys of the read up to the greatest bound, which are kept)."""
        tasks = [(partition, read) for read in range(len(plan.reads)) for partition in partitions]
        kept = plan.within[-1] if keep else None  # the read that serves the greatest bound

        def read_range(task: tuple[str, int]) -> int | list[str]:
            partition, read = task
            lo, bound = plan.reads[read]
            if plan.serves[read] == 1 and not plan.spans[read] and read != kept:
                return self.index.count_range(partition, lo, just_below(bound))
            return self.index.keys_in_range(partition, lo, just_below(bound))

        found: dict[int, list[int | list[str]]] = {}
        units = listed
        for (_, read), result in zip(tasks, fanout.gather(read_range, tasks), strict=True):
            found.setdefault(read, []).append(result)
            units += cost.units((result if isinstance(result, int) else len(result)) * entry)
        counts = []
        for bound, counted, within, start in zip(bounds, plan.counted, plan.within, plan.starts, strict=True):
            inside = 0
            for result in found.get(within, []) if within is not None else []:
                if isinstance(result, int):
                    inside += result
                else:  # only the part of the read in the bound's own bucket
                    inside += bisect_left(result, bound) - bisect_left(result, start)
            counts.append(counted + inside)
        seen = None
        if keep:
            greatest = bounds[-1]
            if kept is None:  # the bound starts its bucket: nothing above it was read
                seen = Seen(greatest, [])
            else:
                pages = [r for r in found[kept] if isinstance(r, list)]
                seen = Seen(plan.reads[kept][0] or None, list(heapq.merge(*pages)))
        return Counted(counts, units, seen)

    def from_top(
        self, partitions: list[str], bounds: list[str], entry: float, *, keep: bool = False
    ) -> Counted:
        """Count the index below each of the sorted ``bounds`` in one pass on every shard:
        a COUNT up to the bound when there is one (and no ``keep``), else the keys up to
        the greatest, each bound counted among them. It reads the entries above the
        greatest bound once, whatever the number of bounds."""
        highest = just_below(bounds[-1])
        if bounds[0] == bounds[-1] and not keep:
            found = fanout.gather(lambda p: self.index.count_range(p, None, highest), partitions)
            return Counted([sum(found)] * len(bounds), sum(cost.units(n * entry) for n in found))
        pages = fanout.gather(lambda p: self.index.keys_in_range(p, None, highest), partitions)
        counts = [sum(bisect_left(page, bound) for page in pages) for bound in bounds]
        seen = Seen(None, list(heapq.merge(*pages))) if keep else None
        return Counted(counts, sum(cost.units(len(page) * entry) for page in pages), seen)


@dataclass(frozen=True)
class Near:
    """The listing next to a key, as ``around`` needs it: ``position`` index keys sort
    before it; ``above`` has the keys just before it in full (at least as many as the
    window takes); ``below`` the nearest keys after it, nearest first, exactly, and one
    more when the listing goes on."""

    position: int
    above: Seen
    below: list[str]


# A board whose index is expected to fit in this many 4 KB blocks a shard is read whole for
# ``around``: one query a shard, billed no more than the count above the member and the
# keys below it are billed at the least (a block each).
WHOLE_LISTING_BLOCKS = 2


def listing_near(
    counting: Counting, board_id: str, period: str, partitions: list[str], key: str, total: int, radius: int
) -> Near:
    """What ``around`` needs of the listing next to ``key``: a window of ``2·radius + 1``
    takes up to ``2·radius`` keys from one side when the other side is short. Exact, in
    the fewest reads:

    - a board whose index is expected to fit in ``WHOLE_LISTING_BLOCKS`` blocks a shard
      is read whole, one query a shard;
    - else the count of the keys before ``key`` keeps the keys it reads (``keep``): the
      index from the top has all of them, a score bucket those from its start, and
      usually the window's. Beside it, the ``2·radius`` nearest keys below are gathered
      (``gather_top``), so that a window at the top of the board needs no second read:
      those few more keys a shard fit in the blocks a query reads anyway;
    - only when the count's keys are too few (a member near the start of its bucket) are
      the nearest keys above gathered too, after it."""
    shards = len(partitions)
    entry = cost.entry_bytes(board_id, period, partitions[0], [key])
    if total * entry <= shards * WHOLE_LISTING_BLOCKS * cost.BLOCK_BYTES:
        # A shard is read for twice the blocks expected at most, so that a count that lags
        # the board cannot make this read the whole of a big one.
        most = max(1, int(2 * WHOLE_LISTING_BLOCKS * cost.BLOCK_BYTES / entry))
        listing = whole_listing(counting.index, partitions, most)
        if listing is not None:
            position, after = bisect_left(listing, key), bisect_right(listing, key)
            return Near(position, Seen(None, listing[:position]), listing[after : after + 2 * radius + 1])
    counted, below = fanout.together(
        lambda: counting.below(board_id, period, partitions, [key], total, keep=True),
        lambda: nearest(counting.index, partitions, key, 2 * radius, above=False),
    )
    assert counted.seen is not None
    above = counted.seen
    wanted = radius if len(below) >= radius else 2 * radius - len(below)
    if len(above.keys) < wanted and above.start is not None:
        # One key more than the window takes: when it has another score, the first entry's
        # tie starts inside what is read, and its rank needs no count.
        gathered = nearest(counting.index, partitions, key, wanted + 1, above=True)
        exact = gathered[: wanted + 1]
        above = Seen(exact[-1] if len(gathered) > wanted + 1 else None, sorted(exact))
    return Near(counted.counts[0], above, below)
