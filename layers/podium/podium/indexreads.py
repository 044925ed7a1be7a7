"""Reading the sharded ranking index: pages for ``ranking.gather_top`` (from the top, or
from the bottom up in mirrored keys), the nearest keys on either side of one, and counts
of the entries below some bounds (the index counted, or the score buckets and one read
inside a bucket, ``podium.buckets``)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence

from podium import buckets, fanout
from podium.buckets import just_above, just_below
from podium.keys import mirror, unmirror
from podium.ports import IndexReader, StructureStore
from podium.ranking import Hint, PageRequest, TopStats, gather_top

# Below this many members a rank counts the index (a few RCU, and fresh at once); above
# it the score buckets bound the cost whatever the board's size (podium.buckets).
COUNT_INDEX_UP_TO = 2 * buckets.SPLIT_AT


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


class Counting:
    """How many index entries sort below each of some sorted bounds."""

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
    ) -> list[int]:
        """On a board of up to ``COUNT_INDEX_UP_TO`` members, or with ``consistent``, the
        index is counted: that reads no more than the buckets would on a small board, and
        it shows a write at once. On a bigger board the score buckets answer: the counts
        of the buckets above each bound, plus the index keys of its own bucket below it,
        each bucket read once on every shard however many bounds it holds (a COUNT when it
        holds one). Exact as of the changes the stream has applied."""
        if consistent or total <= COUNT_INDEX_UP_TO:
            return self.in_index(partitions, bounds)
        layout = self.structures.list_buckets(board_id, period, upto=max(bounds))
        if not layout:
            return self.in_index(partitions, bounds)
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
                return self.index.count_range(partition, lo, just_below(bound))
            return self.index.keys_in_range(partition, lo, just_below(bound))

        found: dict[int, list[int | list[str]]] = {}
        for (_, read), result in zip(tasks, fanout.gather(read_range, tasks), strict=True):
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

    def in_index(self, partitions: list[str], bounds: list[str]) -> list[int]:
        """COUNT the index below each of the sorted ``bounds`` segment by segment (below
        the first, then between consecutive bounds), so the items read add up to the
        entries above the lowest bound, not to the sum of every count."""
        segments = [(None, bounds[0])] + [
            (bounds[i - 1], bounds[i]) for i in range(1, len(bounds)) if bounds[i] != bounds[i - 1]
        ]
        tasks = [(partition, segment) for segment in segments for partition in partitions]

        def count(task: tuple[str, tuple[str | None, str]]) -> int:
            partition, (low, high) = task
            return self.index.count_range(partition, low or None, just_below(high))

        counts = fanout.gather(count, tasks)
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
