"""The top of a sharded index: the first page size per shard, and ``gather_top`` against
an in-memory model of the shards compared with a plain sorted list."""

from __future__ import annotations

import bisect
import itertools
import random
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podium import head
from podium.head import Hint
from podium.keys import member_of_key, shard_of
from podium.ranking import (
    ONE_ROUND_CONFIDENCE,
    PageRequest,
    TopStats,
    binomial_tail,
    first_page_size,
    gather_top,
    max_load_probability,
)
from tests.helpers import small_head


class Shards:
    """Sorted keys per shard, read the way ``Database.index_keys`` reads one shard."""

    def __init__(self, keys_by_shard: list[list[str]]) -> None:
        self.keys = [sorted(keys) for keys in keys_by_shard]

    def read(self, requests: Sequence[PageRequest]) -> list[list[str]]:
        pages = []
        for request in requests:
            keys = self.keys[request.shard]
            start = 0 if request.after is None else bisect.bisect_right(keys, request.after)
            end = len(keys) if request.below is None else bisect.bisect_left(keys, request.below)
            pages.append(keys[start : min(end, start + request.limit)])
        return pages


def on_shards(keys: list[str], shards: int) -> Shards:
    """The keys on the shards the service puts them on: a hash of the member id."""
    by_shard: list[list[str]] = [[] for _ in range(shards)]
    for key in keys:
        by_shard[shard_of(member_of_key(key), shards)].append(key)
    return Shards(by_shard)


def random_board(rng: random.Random, members: int, shards: int) -> tuple[list[str], Shards]:
    """Unique keys with random scores, each on its member's shard."""
    keys = [f"{rng.getrandbits(48):012x}#m{rng.getrandbits(40):x}-{i}" for i in range(members)]
    return sorted(keys), on_shards(keys, shards)


def check_exact(
    listing: list[str], shards: Shards, count: int, after: str | None, limit: int, hint: Hint | None = None
) -> TopStats:
    keys, stats = gather_top(shards.read, count, after, limit, hint)
    rest = listing if after is None else listing[bisect.bisect_right(listing, after) :]
    assert keys[:limit] == rest[:limit]
    assert (len(keys) > limit) == (len(rest) > limit)
    assert len(keys) <= limit + 1
    assert 1 <= stats.rounds <= 2
    return stats


# -- the page size ----------------------------------------------------------------------


@pytest.mark.parametrize("balls", range(0, 6))
@pytest.mark.parametrize("shards", range(1, 5))
def test_max_load_probability_matches_enumeration(balls: int, shards: int) -> None:
    # Given every placement of the balls on the shards
    placements = list(itertools.product(range(shards), repeat=balls))
    for cap in range(0, balls + 2):
        # When the exact probability that no shard exceeds the cap is computed
        fits = sum(1 for p in placements if max(Counter(p).values(), default=0) <= cap)
        # Then it is the share of placements that fit
        assert max_load_probability(balls, shards, cap) == pytest.approx(fits / len(placements), abs=1e-12)


@pytest.mark.parametrize(
    ("limit", "shards"),
    [
        (1, 2),
        (2, 2),
        (10, 2),
        (10, 10),
        (10, 50),
        (10, 100),
        (37, 7),
        (100, 10),
        (100, 50),
        (100, 100),
        (200, 20),
    ],
)
def test_first_page_is_the_smallest_that_fits_the_top_in_95_percent(limit: int, shards: int) -> None:
    # When the first page size is chosen
    page = first_page_size(limit, shards)
    # Then the best limit-1 keys fit below a full page on every shard often enough
    assert max_load_probability(limit - 1, shards, page - 1) >= ONE_ROUND_CONFIDENCE
    # And one key less would not do (or the pages would not hold limit+1 keys in all)
    assert (
        max_load_probability(limit - 1, shards, page - 2) < ONE_ROUND_CONFIDENCE
        or shards * (page - 1) < limit + 1
    )


@pytest.mark.parametrize(("limit", "shards"), [(1000, 10), (1000, 50), (1000, 100), (500, 37)])
def test_large_first_pages_keep_the_union_bound(limit: int, shards: int) -> None:
    # When the exact check would cost too much, the union bound still guarantees 95%
    page = first_page_size(limit, shards)
    assert shards * binomial_tail(limit - 1, 1 / shards, page - 1) <= 1 - ONE_ROUND_CONFIDENCE


@pytest.mark.parametrize("limit", [1, 10, 100, 1000])
def test_one_shard_reads_one_more_than_the_page(limit: int) -> None:
    assert first_page_size(limit, 1) == limit + 1


# Which of the brief's cases fit in 1.5·k + 2·shards items in one round at 95% with equal
# first pages and nothing else to go on. Past a few keys per shard the largest share of
# the top outgrows 1.5 times the mean share: (10,10) needs 5 per shard = 50 > 35; (10,50)
# 3 = 150 > 115; (100,10) 19 = 190 > 170; (100,50) 8 = 400 > 250; (1000,50) 36 = 1800 >
# 1600. That is why a read takes the head's hint (below: every case fits with it).
FIRST_PAGES = {
    (10, 1): (11, True),
    (10, 10): (5, False),
    (10, 50): (3, False),
    (100, 1): (101, True),
    (100, 10): (19, False),
    (100, 50): (8, False),
    (1000, 1): (1001, True),
    (1000, 10): (126, True),
    (1000, 50): (36, False),
}


@pytest.mark.parametrize(("case", "expected"), FIRST_PAGES.items())
def test_first_round_items_against_the_budget(case: tuple[int, int], expected: tuple[int, bool]) -> None:
    limit, shards = case
    page = first_page_size(limit, shards)
    assert (page, shards * page <= 1.5 * limit + 2 * shards) == expected


# -- the read ---------------------------------------------------------------------------


def test_gather_top_when_one_shard_holds_the_whole_top() -> None:
    # Given a board whose best 30 keys are all on shard 3 of 10
    by_shard: list[list[str]] = [[f"5-{s}-{i:03d}" for i in range(40)] for s in range(10)]
    by_shard[3] += [f"1-top-{i:03d}" for i in range(30)]
    listing = sorted(itertools.chain.from_iterable(by_shard))
    board = Shards(by_shard)
    # When the top 10 and the pages after it are read
    stats = check_exact(listing, board, 10, None, 10)
    check_exact(listing, board, 10, listing[9], 10)
    check_exact(listing, board, 10, listing[25], 10)
    # Then a second round fetched the rest of the top, and only from shard 3
    assert stats.rounds == 2
    assert stats.queries == 11


@pytest.mark.parametrize(
    ("limit", "shards", "expected_one_round"),
    [(10, 10, 0.9911), (10, 50, 0.9694), (100, 10, 0.9593), (100, 50, 0.957)],
)
def test_most_reads_take_one_round_and_few_items(limit: int, shards: int, expected_one_round: float) -> None:
    # Given many random boards with several first pages' worth of keys on every shard
    rng = random.Random(limit * 1000 + shards)
    trials = 200
    one_round = 0
    items = 0
    for _ in range(trials):
        listing, board = random_board(rng, 4 * shards * first_page_size(limit, shards) + limit, shards)
        # When the first page is read
        stats = check_exact(listing, board, shards, None, limit)
        one_round += stats.rounds == 1
        items += stats.items
    # Then one round is enough about as often as the binomial model says
    assert one_round / trials >= expected_one_round - 0.04
    # And the items read are the first round's and a little more
    page = first_page_size(limit, shards)
    # (a shard may now and then hold fewer keys than a page)
    assert 0.99 * shards * page <= items / trials <= shards * page + 0.1 * limit


# -- reads steered by the head's hint ---------------------------------------------------

keys_and_members = st.tuples(st.integers(0, 2**16), st.integers(0, 400)).map(lambda t: f"{t[0]:05d}#m{t[1]}")


@settings(max_examples=400, deadline=None)
@given(
    members=st.integers(0, 80),
    shards=st.integers(1, 12),
    limit=st.integers(1, 40),
    skip=st.integers(0, 90),
    seed=st.integers(0, 2**32 - 1),
    hinted=st.booleans(),
    below=st.one_of(st.none(), st.integers(0, 90), keys_and_members),
    expected=st.lists(keys_and_members, max_size=60),
)
def test_gather_top_is_exact_with_or_without_a_hint_whatever_it_says(
    members: int,
    shards: int,
    limit: int,
    skip: int,
    seed: int,
    hinted: bool,
    below: int | str | None,
    expected: list[str],
) -> None:
    # Given a board of random keys on their members' shards, read from a cursor (or the
    # start), with no hint or with one that may be right, stale or plain wrong (a bound
    # anywhere, even before the cursor; keys expected that are not on the board)
    listing, board = random_board(random.Random(seed), members, shards)
    after = listing[skip - 1] if 0 < skip <= len(listing) else None
    if isinstance(below, int):
        below = listing[below] if below < len(listing) else None
    hint = Hint(below, tuple(sorted(expected))) if hinted else None
    # Then the read is exact, says whether more follows, and takes two rounds at most
    check_exact(listing, board, shards, after, limit, hint)


@settings(max_examples=100, deadline=None)
@given(
    members=st.integers(0, 400),
    changes=st.lists(
        st.tuples(st.integers(0, 500), st.one_of(st.none(), st.integers(0, 2**16))), max_size=80
    ),
    shards=st.integers(2, 12),
    limit=st.integers(1, 60),
    skip=st.integers(0, 300),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_stale_head_still_gives_the_exact_top(
    members: int, changes: list[tuple[int, int | None]], shards: int, limit: int, skip: int, seed: int
) -> None:
    # Given a head (with its ladder, in small sizes) read from a board that has changed since
    rng = random.Random(seed)
    board = {m: f"{rng.getrandbits(16):05d}#m{m}" for m in range(members)}
    with small_head():
        current = head.from_index(sorted(board.values())[: head.LADDER_REACH + 1], member_of_key)
        for member, score in changes:
            board.pop(member, None)
            if score is not None:
                board[member] = f"{score:05d}#m{member}"
        listing = sorted(board.values())
        after = listing[skip - 1] if 0 < skip <= len(listing) else None
        # When the top after a cursor is read with the stale head's hint
        hint = current.hint(after, limit)
        # Then it is exact all the same
        check_exact(listing, on_shards(listing, shards), shards, after, limit, hint)


# The brief's cases: a top-k of every size on 1, 10 and 50 shards.
BRIEF = [(k, s) for k in (10, 100, 1000) for s in (1, 10, 50)]


@pytest.mark.parametrize(("limit", "shards"), BRIEF)
def test_with_a_fresh_head_a_top_read_fits_the_budget_in_one_round(limit: int, shards: int) -> None:
    # Given boards of 3,000 members whose head and ladder the stream has just written
    rng = random.Random(limit * 100 + shards)
    trials = 40
    one_round = 0
    most_items = 0
    for _ in range(trials):
        listing, board = random_board(rng, 3000, shards)
        current = head.from_index(listing[: head.LADDER_REACH + 1], member_of_key)
        # When the top is read exactly (consistent=true), steered by the head's hint
        stats = check_exact(listing, board, shards, None, limit, current.hint(None, limit))
        one_round += stats.rounds == 1
        most_items = max(most_items, stats.items)
    # Then no read takes more than 1.5·k + 2·shards items, the board and the head items
    # (read together, before the shards) included, and 95% take one round of shard queries
    assert most_items + 2 <= 1.5 * limit + 2 * shards
    assert one_round >= 0.95 * trials


@pytest.mark.parametrize("shards", [1, 10, 50])
def test_with_a_fresh_head_pages_after_a_cursor_fit_the_budget(shards: int) -> None:
    # Given a board of 3,000 members and a fresh head
    rng = random.Random(shards)
    listing, board = random_board(rng, 3000, shards)
    current = head.from_index(listing[: head.LADDER_REACH + 1], member_of_key)
    # When the listing is walked in pages of 100 as far as the ladder reaches
    limit = 100
    position = 0
    assert current.ladder is not None
    while position + limit + head.margin(limit) <= current.ladder.below[-1]:
        after = listing[position - 1] if position else None
        stats = check_exact(listing, board, shards, after, limit, current.hint(after, limit))
        # Then each page fits the budget in one round
        assert stats.items + 2 <= 1.5 * limit + 2 * shards, position
        assert stats.rounds == 1, position
        position += limit
