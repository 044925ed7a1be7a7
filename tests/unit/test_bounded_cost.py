"""The logic that keeps a request within its read bound, against plain lists: counts taken
either way (the index, the count tree) are exact, and a page with data never asks for more
than its budget covers."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, cast
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podium import cost, indexreads, numbers, treebuild
from podium.counttree import Entry, Node, NodeId
from podium.indexreads import Counting
from podium.keys import shard_of
from podium.models import Board, BoardSettings, RankedEntry
from podium.reads import (
    MAX_DATA_ROUNDS,
    MAX_PAGE_BYTES,
    PROFILE_FIXED_BYTES,
    ReadService,
    profile_units,
)
from podium.treereads import TreeReader
from tests.treestore import MemoryTree, small_nodes


class FakeIndex:
    """Shards of sorted keys, read as the store reads them (bounds inclusive), counting the
    queries and whether each started from the top of a shard."""

    def __init__(self, keys: list[str], shards: int) -> None:
        self.shards = {
            f"b#all#{s}": sorted(k for k in keys if shard_of(k, shards) == s) for s in range(shards)
        }
        self.queries: list[str | None] = []  # each query's lower bound

    def _range(self, partition: str, lo: str | None, hi: str | None) -> list[str]:
        self.queries.append(lo or None)
        return [k for k in self.shards[partition] if (not lo or k >= lo) and (hi is None or k <= hi)]

    def keys_in_range(
        self,
        partition: str,
        lo: str | None,
        hi: str | None,
        *,
        limit: int | None = None,
        reverse: bool = False,
    ) -> list[str]:
        found = self._range(partition, lo, hi)
        return (found[::-1] if reverse else found)[:limit]

    def count_range(self, partition: str, lo: str | None, hi: str | None) -> int:
        return len(self._range(partition, lo, hi))


class RecordedTree(MemoryTree):
    """The in-memory count tree, recording whether each read was strongly consistent."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[bool] = []

    def read_nodes(
        self, board_id: str, period: str, ids: Iterable[NodeId], *, consistent: bool
    ) -> dict[NodeId, Node]:
        self.reads.append(consistent)
        return super().read_nodes(board_id, period, ids, consistent=consistent)


def built_tree(keys: list[str]) -> RecordedTree:
    """The count tree of ``keys`` (each its own member), as a build leaves it."""
    tree = RecordedTree()
    tree.put_nodes("b", "all", treebuild.build({k: Entry(k, (0, 1)) for k in keys}), None)
    return tree


def a_board() -> Board:
    return Board("b", BoardSettings(), None, datetime(2026, 11, 25, tzinfo=UTC))


keys_strategy = st.lists(
    st.text(alphabet="0123456789abz~", min_size=1, max_size=6), min_size=1, max_size=80, unique=True
)


@settings(max_examples=300, deadline=None)
@given(
    keys_strategy,
    st.integers(1, 6),
    st.lists(st.text(alphabet="0123456789abz~", min_size=1, max_size=6), min_size=1, max_size=12),
    st.booleans(),
    st.sampled_from([0.0, 30.0, 1e9]),
    st.sampled_from([1, 16, 4096]),
    st.sampled_from([0, 2048]),
)
def test_counts_are_exact_whichever_way_they_are_taken(
    keys: list[str],
    shards: int,
    bounds: list[str],
    consistent: bool,
    budget: float,
    block: int,
    small_board: int,
) -> None:
    # Given a board's keys on some shards and its count tree of small nodes (several
    # levels), blocks of any size (so either way may be the cheaper), any budget, and
    # boards counted as small or not
    keys.sort()
    bounds.sort()
    index = FakeIndex(keys, shards)
    partitions = list(index.shards)

    # When the entries below each bound are counted
    with (
        small_nodes(leaf_max=4, fanout=3),
        patch.object(cost, "BLOCK_BYTES", block),
        patch.object(indexreads, "COUNT_INDEX_UP_TO", small_board),
    ):
        tree = built_tree(keys)
        counting = Counting(cast(Any, index), TreeReader(tree))
        counted = counting.below(
            a_board(), "all", partitions, bounds, len(keys), consistent=consistent, budget=budget
        )

    # Then every count is the sorted list's, and what was read is billed
    assert counted.counts == [bisect_left(keys, bound) for bound in bounds]
    assert counted.units >= 0.5 * (len(index.queries) + len(tree.log))
    # With consistent=true the tree is read strongly consistent, and the index itself is
    # counted whenever the budget allows it
    if consistent:
        assert all(tree.reads)
        if budget >= 1e9:
            assert index.queries == [None] * shards


def test_a_hundred_bounds_on_a_small_board_read_each_shard_once() -> None:
    # Given 2,000 members on 100 shards (a small board: one pass over the index costs no
    # more than the tree's paths), and 100 bounds
    keys = [f"{n:05d}#m{n}" for n in range(2000)]
    index, tree = FakeIndex(keys, 100), built_tree(keys)
    bounds = sorted(keys[n] for n in range(5, 2000, 20))

    # When they are counted
    counted = Counting(cast(Any, index), TreeReader(tree)).below(
        a_board(), "all", list(index.shards), bounds, len(keys)
    )

    # Then exactly, in one query per shard (not one per bound and shard: 10,000)
    assert counted.counts == [bisect_left(keys, bound) for bound in bounds]
    assert len(index.queries) == 100
    assert tree.reads == []


@pytest.mark.parametrize("shards", [1, 100])
def test_a_hundred_bounds_on_a_big_board_read_the_tree_s_paths_once(shards: int) -> None:
    # Given 20,000 members on 1 or 100 shards, their count tree as built, and 100 bounds
    # spread over the listing
    keys = [f"{n:06d}#m{n}" for n in range(20_000)]
    index, tree = FakeIndex(keys, shards), built_tree(keys)
    bounds = sorted(keys[n] for n in range(100, 20_000, 200))

    # When they are counted by a reader that has not seen the tree, then by one that has
    reader = TreeReader(tree)
    cold = Counting(cast(Any, index), reader).below(a_board(), "all", list(index.shards), bounds, len(keys))
    reads = len(tree.reads)
    warm = Counting(cast(Any, index), reader).below(a_board(), "all", list(index.shards), bounds, len(keys))

    # Then exactly, without a query of the index: the union of the paths, a level a round
    # when cold, in one round when warm, billed half a unit a node
    expected = [bisect_left(keys, bound) for bound in bounds]
    assert cold.counts == warm.counts == expected
    assert index.queries == []
    levels = cost.tree_levels(len(keys))
    assert reads == len(levels)
    assert len(tree.reads) == reads + 1
    assert warm.units == 0.5 * cost.path_items(len(keys), 100) == 0.5 * sum(min(100, n) for n in levels)


class FakeMembers:
    def __init__(self, sizes: dict[str, int]) -> None:
        self.sizes = sizes
        self.asked: list[list[str]] = []

    def get_data(self, board_id: str, member_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        self.asked.append(list(member_ids))
        return {m: {"blob": "x" * self.sizes[m]} for m in member_ids if self.sizes[m] >= 0}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([-1, 0, 10, 3000, 20_000, 64 * 1024 - 20]), min_size=1, max_size=1000),
    st.floats(0.0, 500.0),
    st.integers(0, 64 * 1024),
)
def test_a_page_with_data_never_asks_for_more_than_its_budget_covers(
    sizes: list[int], budget: float, slack: int
) -> None:
    # Given members whose profiles are of any size up to 64 KiB (or missing), in any order,
    # on a board that records data at least as big as its largest
    members = FakeMembers({f"m{n:04d}": size for n, size in enumerate(sizes)})
    largest = len(numbers.dumps({"blob": "x" * max(sizes)})) + slack
    board = _board(largest)
    ranked = [RankedEntry(n + 1, f"m{n:04d}", Decimal(n)) for n in range(len(sizes))]
    service = ReadService(
        cast(Any, None), cast(Any, None), cast(Any, members), cast(Any, None), cast(Any, None)
    )

    # When a page with data is made within a budget
    page = service._with_data(board, ranked, budget)

    # Then it is a prefix of the listing with each member's data, under 5 MiB, holding one
    # entry at least; each read it sent was covered by what was left of the budget had
    # every profile asked for been as big as a profile can be, so that all it read stays
    # within the budget (or one profile, when the budget cannot cover one)
    assert 1 <= len(page) <= len(ranked)
    assert [e.member_id for e in page] == [e.member_id for e in ranked[: len(page)]]
    assert all(e.data == ({"blob": "x" * sizes[n]} if sizes[n] >= 0 else {}) for n, e in enumerate(page))
    body = sum(len(numbers.dumps(e.to_json())) + 1 for e in page)
    assert body < MAX_PAGE_BYTES or len(page) == 1
    assert len(members.asked) <= MAX_DATA_ROUNDS

    def billed(member: str) -> float:  # the profile item: its data, keys, names and times
        data = {"blob": "x" * sizes[int(member[1:])]} if sizes[int(member[1:])] >= 0 else {}
        return cost.units(len(numbers.dumps(data)) + PROFILE_FIXED_BYTES + len("board") + len(member))

    read = [billed(m) for asked in members.asked for m in asked]
    assert sum(read) <= max(budget, profile_units(largest))


def _board(largest_data: int) -> Board:
    created = datetime(2026, 11, 25, tzinfo=UTC)
    return Board("board", BoardSettings(), None, created, largest_data=largest_data)


def test_a_page_of_small_data_holds_the_whole_limit() -> None:
    # Given a board of 1,000 members whose data is small, as the board records
    members = FakeMembers({f"m{n:04d}": 40 for n in range(1000)})
    ranked = [RankedEntry(n + 1, f"m{n:04d}", Decimal(n)) for n in range(1000)]
    service = ReadService(
        cast(Any, None), cast(Any, None), cast(Any, members), cast(Any, None), cast(Any, None)
    )

    # When a page of 1,000 with data is made within what the bound leaves
    page = service._with_data(_board(len(numbers.dumps({"blob": "x" * 40}))), ranked, 490.0)

    # Then it holds as many as the budget covers at half a unit a profile (the least a
    # profile read costs), read 100 at a time: all but the last 20
    assert len(page) == int(490.0 // 0.5) == 980
    assert [len(asked) for asked in members.asked] == [100] * 9 + [80]

    # And on a board that once held data of 64 KiB, far fewer: each read assumes profiles
    # that big
    members.asked.clear()
    assert len(service._with_data(_board(64 * 1024), ranked, 490.0)) < 500
