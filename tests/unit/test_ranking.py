"""Merging shards, assigning ranks and the around-window, against a plain sorted list."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from podium.keys import RankOrder
from podium.ranking import around_window, assign_ranks, decode, merge_shards


@given(st.lists(st.integers(0, 50), max_size=60), st.integers(1, 7), st.integers(1, 70))
def test_merge_of_shards_is_the_sorted_union(values: list[int], shards: int, limit: int) -> None:
    # Given unique keys spread over shards, each shard sorted
    keys = [f"{v:03d}#{i}" for i, v in enumerate(values)]
    pages: list[list[str]] = [[] for _ in range(shards)]
    for index, key in enumerate(keys):
        pages[index % shards].append(key)
    # When the shards are merged
    merged = merge_shards([sorted(p) for p in pages], limit)
    # Then it is the head of the plain sorted list
    assert merged == sorted(keys)[:limit]


@given(st.lists(st.integers(-5, 5), min_size=1, max_size=40), st.booleans())
def test_ranks_match_standard_competition_ranking(values: list[int], earliest: bool) -> None:
    order = RankOrder(descending=True, earliest=earliest)
    keys = sorted(order.sort_key(Decimal(v), f"m{i:03d}", i) for i, v in enumerate(values))
    entries = decode(order, keys)
    ranked = assign_ranks(entries, earliest=earliest, first_position=1, previous=None)
    for position, entry in enumerate(ranked, start=1):
        if earliest:
            assert entry.rank == position
        else:
            assert entry.rank == 1 + sum(1 for v in values if Decimal(v) > entry.score)
    # A page that starts mid-listing, continued from the previous entry, agrees
    if len(ranked) > 2:
        tail = assign_ranks(
            entries[2:],
            earliest=earliest,
            first_position=3,
            previous=(ranked[1].score, ranked[1].rank),
        )
        assert [e.rank for e in tail] == [e.rank for e in ranked[2:]]


@given(st.integers(0, 30), st.integers(0, 30), st.integers(0, 10))
def test_around_window_is_full_and_shifts_at_the_ends(above: int, below: int, radius: int) -> None:
    take_above, take_below = around_window(
        [str(i) for i in range(above)], [str(i) for i in range(below)], radius
    )
    assert take_above + take_below + 1 == min(2 * radius + 1, above + below + 1)
    assert take_above <= above
    assert take_below <= below
    if above >= radius and below >= radius:
        assert take_above == take_below == radius
