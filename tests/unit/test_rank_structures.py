"""The pure parts of the head and the score buckets, against plain sorted lists."""

from __future__ import annotations

from bisect import bisect_left

from hypothesis import given
from hypothesis import strategies as st

from podium import buckets, head
from podium.buckets import Bucket
from podium.keys import member_of_key
from tests.helpers import small_head

ascii_keys = st.text(alphabet="#~0123456789abzAZ.-:@", min_size=1, max_size=12)


@given(ascii_keys, ascii_keys)
def test_just_below_keeps_exactly_the_keys_that_sort_below(key: str, bound: str) -> None:
    # Given any two ASCII sort keys; Then key <= just_below(bound) exactly when key < bound
    assert (key <= buckets.just_below(bound)) == (key < bound)


@given(
    st.lists(ascii_keys, min_size=1, max_size=60, unique=True),
    st.lists(st.integers(0, 59), max_size=8),
    st.sets(st.integers(0, 20)),
    st.lists(ascii_keys, min_size=1, max_size=5),
)
def test_a_count_plan_counts_exactly_the_keys_below_each_bound(
    keys: list[str], cuts: list[int], dirty: set[int], bounds: list[str]
) -> None:
    # Given a board's keys split into buckets at arbitrary keys, some of them dirty
    keys.sort()
    starts = sorted({buckets.BELOW_EVERY_KEY, *(keys[i] for i in cuts if i < len(keys))})
    layout = []
    for index, lo in enumerate(starts):
        hi = starts[index + 1] if index + 1 < len(starts) else None
        inside = [k for k in keys if k >= lo and (hi is None or k < hi)]
        # a dirty bucket's count is wrong on purpose: a plan must not trust it
        count = len(inside) + (1000 if index in dirty else 0)
        layout.append(Bucket(lo, count, 1, dirty=index in dirty))
    bounds.sort()

    # When each bound's plan is carried out over the keys
    plans = buckets.plan_counts(layout, bounds)

    # Then it counts exactly the keys below the bound
    for bound, plan in zip(bounds, plans, strict=True):
        counted = plan.counted + sum(
            sum(1 for k in keys if k >= lo and (hi is None or k <= hi)) for lo, hi in plan.ranges
        )
        assert counted == sum(1 for k in keys if k < bound)
        # and it counts in the index at most the bound's own bucket and the dirty ones
        assert len(plan.ranges) <= 1 + len(dirty)


def test_a_change_is_applied_skipped_or_marks_the_bucket_dirty_by_when_it_was_written() -> None:
    # Given a bucket counted from the index between t=10 s and t=10.2 s
    bucket = Bucket("k", 5, 2, snapshot_from_us=10_000_000, snapshot_to_us=10_200_000)
    # Then a change written after the snapshot is applied, one long before is skipped,
    # and one written around it (the index may or may not have shown it) marks it dirty
    assert buckets.classify(bucket, 10_200_001, 10_200_001) == buckets.APPLY
    assert buckets.classify(bucket, 8_000_000, 8_999_999) == buckets.SKIP
    assert buckets.classify(bucket, 9_500_000, 9_500_000) == buckets.DIRTY
    assert buckets.classify(bucket, 10_100_000, 10_100_000) == buckets.DIRTY
    # and a bucket counted by the stream from empty takes every change
    assert buckets.classify(Bucket("", 0, 1), 0, 0) == buckets.APPLY


def test_cut_and_median_split_partition_the_keys() -> None:
    keys = [f"k{i:03d}" for i in range(11)]
    assert buckets.cut(keys, 4) == [("", 4), ("k004", 4), ("k008", 3)]
    assert buckets.cut([], 4) == [("", 0)]
    assert buckets.median_split(keys) == ("k005", 5, 6)
    assert buckets.median_split(["a"]) is None


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
        assert head.decode(head.encode(current.keys)) == current.keys
