"""The pure parts of the head, against plain sorted lists (the count tree, which ranks are
counted from: tests/unit/test_counttree.py)."""

from __future__ import annotations

from bisect import bisect_left

from hypothesis import given
from hypothesis import strategies as st

from podium import head
from podium.dal.codecs import pack_keys, unpack_keys
from podium.keys import member_of_key
from tests.helpers import small_head


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
