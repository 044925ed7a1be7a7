"""Reading the sharded ranking index: pages for ``ranking.gather_top`` (from the top, or
from the bottom up in mirrored keys), the nearest keys on either side of one, and counts
of the entries below some bounds (the index counted, or the score buckets and one read
inside a bucket, ``podium.buckets``)."""

from __future__ import annotations

from bisect import bisect_left
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


@dataclass(frozen=True)
class Counted:
    """How many index entries sort below each bound, and what counting them read (read
    units, estimated from the entries read: ``podium.cost``)."""

    counts: list[int]
    units: float


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
        ``ConsistentRead`` so that every change the stream has applied counts."""
        shards = len(partitions)
        entry = cost.entry_bytes(board_id, period, partitions[0], bounds)
        if total <= COUNT_INDEX_UP_TO:
            return self.from_top(partitions, bounds, entry)
        layout = self.structures.list_buckets(board_id, period, upto=max(bounds), consistent=consistent)
        if not layout:  # a board whose buckets were never built
            return self.from_top(partitions, bounds, entry)
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
            counted = self.from_top(partitions, bounds, entry)
            return Counted(counted.counts, listed + counted.units)
        return self.in_buckets(plan, partitions, bounds, entry, listed)

    def in_buckets(
        self, plan: buckets.CountPlan, partitions: list[str], bounds: list[str], entry: float, listed: float
    ) -> Counted:
        """Carry out a plan: each read on every shard at once (a COUNT when it serves one
        bound in one bucket, else the keys, counted against each bound it serves)."""
        tasks = [(partition, read) for read in range(len(plan.reads)) for partition in partitions]

        def read_range(task: tuple[str, int]) -> int | list[str]:
            partition, read = task
            lo, bound = plan.reads[read]
            if plan.serves[read] == 1 and not plan.spans[read]:
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
        return Counted(counts, units)

    def from_top(self, partitions: list[str], bounds: list[str], entry: float) -> Counted:
        """Count the index below each of the sorted ``bounds`` in one pass on every shard:
        a COUNT up to the bound when there is one, else the keys up to the greatest, each
        bound counted among them. It reads the entries above the greatest bound once,
        whatever the number of bounds."""
        highest = just_below(bounds[-1])
        if bounds[0] == bounds[-1]:
            found = fanout.gather(lambda p: self.index.count_range(p, None, highest), partitions)
            return Counted([sum(found)] * len(bounds), sum(cost.units(n * entry) for n in found))
        pages = fanout.gather(lambda p: self.index.keys_in_range(p, None, highest), partitions)
        counts = [sum(bisect_left(page, bound) for page in pages) for bound in bounds]
        return Counted(counts, sum(cost.units(len(page) * entry) for page in pages))
