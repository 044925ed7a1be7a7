"""Reading the sharded ranking index: pages for ``ranking.gather_top`` (from the top, or
from the bottom up in mirrored keys), the nearest keys on either side of one, counts of
the entries below some bounds (the index counted, or the count tree's paths read,
``podium.treereads``), and the listing next to one key for ``around``."""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence

from podium import cost, fanout
from podium.head import Hint
from podium.keys import just_above, just_below, mirror, unmirror
from podium.models import Board
from podium.ports import IndexReader
from podium.ranking import PageRequest, TopStats, gather_top
from podium.treereads import TreeCount, TreeReader
from podium.values import frozen

# Up to this many members the index is counted rather than the tree (``Counting.reads_index``):
# it shows a write at once, not once the stream has applied it. Past it a count of a deep
# member from the top reads thousands of entries where its path reads a few nodes.
COUNT_INDEX_UP_TO = 2048


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


@frozen
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


@frozen
class Counted:
    """How many index entries sort below each bound, and what counting them read (read
    units, estimated from the entries or nodes read: ``podium.cost``); with ``keep``, the
    keys a count of the index read above the greatest bound (``Seen``; None when the tree
    counted)."""

    counts: list[int]
    units: float
    seen: Seen | None = None


def tree_units(count: TreeCount) -> float:
    """What a count from the tree is billed: every node it asked for, by its size (one
    block at the least, and one block at the most but for a leaf full of tombstones)."""
    return sum(cost.units(size, consistent=consistent) for size, consistent in count.reads)


class Counting:
    """How many index entries sort below each of some sorted bounds, exactly, from the
    board's count tree or from the index itself, whichever is expected to cost less."""

    def __init__(self, index: IndexReader, tree: TreeReader) -> None:
        self.index = index
        self.tree = tree

    @staticmethod
    def reads_index(total: int) -> bool:
        """Whether a count reads the index rather than the tree: on a small board
        (``COUNT_INDEX_UP_TO``), whose every entry read once costs little (at most about 75
        RCU, 2,048 entries on 100 shards) and shows a write at once, where the tree shows it
        once the stream has applied it."""
        return total <= COUNT_INDEX_UP_TO

    def below(
        self,
        board: Board,
        period: str,
        partitions: list[str],
        bounds: list[str],
        total: int,
        *,
        consistent: bool = False,
        budget: float | None = None,
        keep: bool = False,
    ) -> Counted:
        """Two exact ways:

        - **the index from the top**: every entry up to the greatest bound, once, on every
          shard (a COUNT for one bound; the keys, counted against each bound, for several).
          It shows a write at once, and costs at least half a unit a shard. Small boards
          are counted so (``reads_index``).
        - **the count tree**: the nodes on the paths from its root to the bounds' leaves, in
          one BatchGetItem (``podium.treereads``): a few items a bound, fewer for many
          bounds (the paths share their upper levels), whatever the board's size and shard
          count. Exact as of the changes the stream has applied (about a second behind).

        ``consistent`` asks for the index itself: it is counted from the top while that is
        expected to read no more than ``budget`` read units (``cost.READ_BOUND`` unless
        given), judged from the whole board, or else from the tree's count (read strongly
        consistent) of the entries above the greatest bound; past that (a member deep in a
        big board) that count of the tree answers, as of every change the stream has applied.

        ``keep`` reads the keys below the greatest bound rather than a COUNT of them (they
        cost the same) when the index is counted, and keeps them (``Counted.seen``)."""
        shards = len(partitions)
        entry = cost.entry_bytes(board.board_id, period, partitions[0], bounds)
        if self.reads_index(total):
            return self.from_top(partitions, bounds, entry, keep=keep)
        budget = cost.READ_BOUND if budget is None else budget
        if consistent and cost.spread_units(total, shards, entry) <= budget:
            return self.from_top(partitions, bounds, entry, keep=keep)
        count = self.tree.count(board.board_id, period, bounds, consistent=consistent)
        units = tree_units(count)
        if consistent and units + cost.spread_units(max(count.counts), shards, entry) <= budget:
            counted = self.from_top(partitions, bounds, entry, keep=keep)
            return Counted(counted.counts, units + counted.units, counted.seen)
        return Counted(count.counts, units)

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


@frozen
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
    counting: Counting, board: Board, period: str, partitions: list[str], key: str, total: int, radius: int
) -> Near:
    """What ``around`` needs of the listing next to ``key``: a window of ``2·radius + 1``
    takes up to ``2·radius`` keys from one side when the other side is short. Exact, in
    the fewest reads:

    - a board whose index is expected to fit in ``WHOLE_LISTING_BLOCKS`` blocks a shard
      is read whole, one query a shard;
    - else the position is counted as ``rank`` counts it. Beside the count, the
      ``2·radius`` nearest keys below are gathered (``gather_top``), so that a window at
      the top of the board needs no second read: those few more keys a shard fit in the
      blocks a query reads anyway;
    - the keys above come with the count when it reads the index from the top (``keep``:
      every key above); when the tree counts (it reads no index key), the ``2·radius + 1``
      nearest keys above are gathered beside it too, for the same reason at the bottom of
      the board, and one more so that a tie that starts inside them needs no count."""
    shards = len(partitions)
    entry = cost.entry_bytes(board.board_id, period, partitions[0], [key])
    if total * entry <= shards * WHOLE_LISTING_BLOCKS * cost.BLOCK_BYTES:
        # A shard is read for twice the blocks expected at most, so that a count that lags
        # the board cannot make this read the whole of a big one.
        most = max(1, int(2 * WHOLE_LISTING_BLOCKS * cost.BLOCK_BYTES / entry))
        listing = whole_listing(counting.index, partitions, most)
        if listing is not None:
            position, after = bisect_left(listing, key), bisect_right(listing, key)
            return Near(position, Seen(None, listing[:position]), listing[after : after + 2 * radius + 1])
    index = counting.index
    if counting.reads_index(total):
        counted, below = fanout.together(
            lambda: counting.below(board, period, partitions, [key], total, keep=True),
            lambda: nearest(index, partitions, key, 2 * radius, above=False),
        )
        assert counted.seen is not None
        return Near(counted.counts[0], counted.seen, below)
    wanted = 2 * radius + 1
    counted, below, gathered = fanout.together(
        lambda: counting.below(board, period, partitions, [key], total),
        lambda: nearest(index, partitions, key, 2 * radius, above=False),
        lambda: nearest(index, partitions, key, wanted, above=True),
    )
    exact = gathered[:wanted]
    above = Seen(exact[-1] if len(gathered) > wanted else None, sorted(exact))
    return Near(counted.counts[0], above, below)
