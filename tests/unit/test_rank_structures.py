"""The pure parts of the head and of the reads' score buckets, against plain sorted lists
(the count tree, which the stream keeps instead of buckets: tests/unit/test_counttree.py)."""

from __future__ import annotations

from bisect import bisect_left

from hypothesis import given, settings
from hypothesis import strategies as st

from podium import buckets, head
from podium.dal.codecs import pack_keys, unpack_keys
from podium.keys import member_of_key
from podium.models import Bucket
from tests.helpers import small_head

ascii_keys = st.text(alphabet="#~0123456789abzAZ.-:@", min_size=1, max_size=12)


@given(ascii_keys, ascii_keys)
def test_just_below_keeps_exactly_the_keys_that_sort_below(key: str, bound: str) -> None:
    # Given any two ASCII sort keys; Then key <= just_below(bound) exactly when key < bound
    assert (key <= buckets.just_below(bound)) == (key < bound)


def _layout(keys: list[str], cuts: list[int]) -> list[Bucket]:
    """Buckets over the sorted ``keys``, cut at arbitrary keys, each counting its keys."""
    starts = sorted({buckets.BELOW_EVERY_KEY, *(keys[i] for i in cuts if i < len(keys))})
    layout = []
    for index, lo in enumerate(starts):
        hi = starts[index + 1] if index + 1 < len(starts) else None
        layout.append(Bucket(lo, sum(1 for k in keys if k >= lo and (hi is None or k < hi)), 1))
    return layout


# What one read of n entries costs: a minimum per read (the shards' rounding) and a price
# per entry, in several proportions; None: every bucket that holds bounds read on its own.
READ_COSTS = [None, lambda n: 1.0, lambda n: 0.0 + n, lambda n: 5.0 + n / 4, lambda n: 50.0 + n]


@settings(deadline=None)
@given(
    st.lists(ascii_keys, min_size=1, max_size=60, unique=True),
    st.lists(st.integers(0, 59), max_size=8),
    st.lists(ascii_keys, min_size=1, max_size=9),
    st.sampled_from(READ_COSTS),
)
def test_a_count_plan_counts_exactly_the_keys_below_each_bound(
    keys: list[str], cuts: list[int], bounds: list[str], read_cost: buckets.ReadCost | None
) -> None:
    # Given a board's keys split into buckets at arbitrary keys
    keys.sort()
    layout = _layout(keys, cuts)
    bounds.sort()

    # When the plan for the sorted bounds is carried out over the keys
    plan = buckets.plan_counts(layout, bounds, read_cost)

    # Then it counts exactly the keys below each bound: those of the buckets below, and
    # those of its read from its own bucket's start
    for bound, counted, within, start in zip(bounds, plan.counted, plan.within, plan.starts, strict=True):
        inside = 0
        if within is not None:
            lo, hi = plan.reads[within]
            assert lo <= start < bound <= hi
            inside = sum(1 for k in keys if lo <= k < hi and start <= k < bound)
        assert counted + inside == sum(1 for k in keys if k < bound)
    # and its reads do not overlap, each up to the greatest bound it serves
    assert all(a[1] <= b[0] for a, b in zip(plan.reads, plan.reads[1:], strict=False))
    assert all(hi in bounds for _, hi in plan.reads)
    assert sum(plan.serves) == sum(1 for w in plan.within if w is not None)
    if read_cost is None:  # never merged: one read per bucket that holds bounds
        assert not any(plan.spans)


def _groupings(count: int) -> list[list[tuple[int, int]]]:
    """Every way to cut ``count`` items in order into runs (first, last)."""
    if count == 0:
        return [[]]
    found = []
    for first in range(count):
        for rest in _groupings(first):
            found.append([*rest, (first, count - 1)])
    return found


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=9),
    st.lists(st.integers(0, 8), min_size=1, max_size=12),
    st.floats(0.0, 60.0),
    st.floats(0.0, 3.0),
)
def test_a_count_plan_groups_the_buckets_into_the_cheapest_reads(
    sizes: list[int], held: list[int], minimum: float, per_entry: float
) -> None:
    # Given buckets of any sizes, bounds in some of them, and reads that cost a minimum
    # (a query on every shard) plus a price per entry read
    keys = [f"k{bucket:02d}-{n:03d}" for bucket, size in enumerate(sizes) for n in range(size)]
    layout = [Bucket(buckets.BELOW_EVERY_KEY, sizes[0], 1)]
    layout += [Bucket(f"k{bucket:02d}-", size, 1) for bucket, size in enumerate(sizes) if bucket > 0]
    bounds = sorted(f"k{b % len(sizes):02d}-{n:03d}~" for n, b in enumerate(held))
    assert all(b.count == sum(1 for k in keys if k.startswith(b.lo or "k00-")) for b in layout)

    def read_cost(entries: float) -> float:
        return minimum + per_entry * entries

    # When the plan is made
    plan = buckets.plan_counts(layout, bounds, read_cost)

    # Then no other grouping of the buckets that hold bounds into contiguous reads costs less
    # (by the same estimate of each read's entries), and the plan's reads are one of them
    touched = sorted({buckets.locate(layout, b) for b in bounds})
    per_bucket = {t: sum(1 for b in bounds if buckets.locate(layout, b) == t) for t in touched}

    def entries(first: int, last: int) -> float:
        end = touched[last]
        whole = sum(layout[i].count for i in range(touched[first], end + 1))
        return whole - layout[end].count // (per_bucket[end] + 1)

    cheapest = min(
        sum(read_cost(entries(first, last)) for first, last in grouping)
        for grouping in _groupings(len(touched))
    )
    assert abs(plan.units - cheapest) <= 1e-6 * max(1.0, cheapest)
    assert len(plan.reads) <= len(touched)


@given(
    st.lists(
        st.tuples(st.integers(0, 90), st.one_of(st.none(), st.integers(0, 400))),
        max_size=200,
    ),
    st.integers(0, 80),
)
def test_the_head_and_its_ladder_after_any_changes_count_the_sorted_board(
    changes: list[tuple[int, int | None]], initial: int
) -> None:
    # Given a board (member -> key) and a head read from its index, in small sizes (8 keys,
    # a ladder sample every 4 positions down to 40) so that boards of dozens have both
    def key(member: int, score: int) -> str:
        return f"{score:04d}#m{member:02d}"

    board = {m: key(m, m * 7 % 50) for m in range(initial)}
    with small_head():
        current = head.from_index(sorted(board.values())[: head.LADDER_REACH + 1], member_of_key)

        # When members arrive, move and leave one at a time, each change applied once, the
        # head read again from the index whenever it asks
        for member, score in changes:
            new = key(member, score) if score is not None else None
            old = board.pop(member, None)
            if new is not None:
                board[member] = new
            current = head.apply_change(current, f"m{member:02d}", old, new, member_of_key)
            if current.needs_refill:
                current = head.from_index(sorted(board.values())[: head.LADDER_REACH + 1], member_of_key)

            # Then the head is the board's best keys, and each ladder sample counts exactly
            # the keys below it (the board's size too, when it ends within reach)
            ordered = sorted(board.values())
            assert current.keys == ordered[: len(current.keys)]
            if current.complete:
                assert len(current.keys) == len(ordered)
            ladder = current.ladder
            assert (ladder is None) == current.complete
            if ladder is not None:
                assert list(ladder.keys) == sorted(ladder.keys)
                assert list(ladder.below) == [bisect_left(ordered, k) for k in ladder.keys]
                assert ladder.total in (None, len(ordered))
                # and a ladder still in use is fine enough to steer a read
                assert not ladder.is_worn(len(current.keys))

        # and the head answers a page only when it can
        ordered = sorted(board.values())
        for limit in (1, 5, 10):
            page = current.page(limit)
            if page is not None:
                assert page == (ordered[:limit], len(ordered) > limit)
        assert unpack_keys(pack_keys(current.keys)) == current.keys
