"""``around`` on DynamoDB Local: every window of a board exact against a plain sorted list,
whichever way its reads go (the whole index of a small board, the count from the top with
the keys it reads, the count tree beside a gather of the keys on either side), and what a
window costs next to a rank (docs/performance.md, "What around costs")."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from podium import cost, indexreads
from podium.dal import Database
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import Metered, TickingClock, build_count_tree, unique_id
from tests.treestore import small_nodes

pytestmark = pytest.mark.integration

MEMBERS = 60
SHARDS = 3
RADII = (0, 1, 4)


def listing(scores: dict[str, Decimal], joined: dict[str, int], tie_break: str) -> list[tuple[int, str]]:
    """The board's listing as (rank, member), higher first: ties by member id sharing a
    rank, or (``earliest``) by who reached the score first, each ranked by position."""
    if tie_break == "earliest":
        ordered = sorted(scores, key=lambda m: (-scores[m], joined[m]))
        return [(position + 1, m) for position, m in enumerate(ordered)]
    ordered = sorted(scores, key=lambda m: (-scores[m], m))
    return [(1 + sum(1 for s in scores.values() if s > scores[m]), m) for m in ordered]


def window(expected: list[tuple[int, str]], member: str, radius: int) -> list[tuple[int, str]]:
    """The ``2·radius + 1`` entries around the member, shifted to stay full at the ends."""
    position = [m for _, m in expected].index(member)
    size = min(2 * radius + 1, len(expected))
    start = min(max(0, position - radius), len(expected) - size)
    return expected[start : start + size]


def tied_board(store: Database, tie_break: str) -> tuple[str, dict[str, Decimal], dict[str, int]]:
    """60 members on 3 shards in ties of about 9 (longer than a window's side, so windows
    open inside ties that start above them), joined in a shuffled order, with a count tree
    of nodes of 3 entries and 3 children (built from the index, so that ties run over leaves'
    bounds and the tree has several levels) and its count of members."""
    service = Services(store, clock=TickingClock())
    board = unique_id("around")
    service.boards.put_board(board, board_request({"shards": Decimal(SHARDS), "tieBreak": tie_break}))
    scores = {f"a{i:02d}": Decimal(i % 7) / 4 for i in range(MEMBERS)}
    order = sorted(scores)
    random.Random(7).shuffle(order)
    joined = {}
    for turn, member in enumerate(order):
        service.members.put_member(board, member, member_request({"score": scores[member]}))
        joined[member] = turn
    with small_nodes(leaf_max=3, fanout=3):
        build_count_tree(service, board)
    store.boards.apply_member_count("count-" + board, board, len(scores))
    return board, scores, joined


Tied = tuple[str, str, dict[str, Decimal], dict[str, int]]


@pytest.fixture(scope="module", params=["shared", "earliest"])
def tied(request: pytest.FixtureRequest, store: Database) -> Tied:
    return request.param, *tied_board(store, request.param)


@pytest.mark.parametrize("reads", ["the whole index", "the count from the top", "the count tree"])
def test_every_window_is_exact_whichever_way_it_is_read(
    tied: Tied,
    service: Services,
    monkeypatch: pytest.MonkeyPatch,
    reads: str,
) -> None:
    # Given a board of ties, read whole (its index fits in a block a shard), or counted from
    # the top with the keys above kept, or counted in its tree beside gathers of the keys on
    # either side (the index read once costs more than the tree's path)
    tie_break, board, scores, joined = tied
    if reads != "the whole index":
        monkeypatch.setattr(indexreads, "WHOLE_LISTING_BLOCKS", 0)
    if reads == "the count tree":
        monkeypatch.setattr(indexreads, "COUNT_INDEX_UP_TO", 0)
    expected = listing(scores, joined, tie_break)

    # When the window around every member is read, with several radii
    for radius in RADII:
        for member in scores:
            answer = service.reads.around(board, member, radius)

            # Then it is the listing's consecutive entries around the member, exact ranks
            # and all, and the board's size
            assert [(e.rank, e.member_id) for e in answer.entries] == window(expected, member, radius), (
                member,
                radius,
            )
            assert all(e.score == scores[e.member_id] for e in answer.entries)
            assert answer.total == MEMBERS


def _board(service: Services, store: Database, members: int, shards: int) -> tuple[str, list[str]]:
    """A board of ``members`` with distinct scores on ``shards`` shards, its member count
    and count tree as the stream would keep them; its members, best first."""
    board = unique_id("cost")
    service.boards.put_board(board, board_request({"shards": Decimal(shards)}))
    ids = [f"c{i:03d}" for i in range(members)]
    for index, member in enumerate(ids):
        service.members.put_member(board, member, member_request({"score": Decimal(members - index)}))
    build_count_tree(service, board)
    store.boards.apply_member_count("count-" + board, board, members)
    return board, ids


def test_a_window_on_a_small_board_costs_what_a_rank_costs(
    service: Services, store: Database, metered: Metered
) -> None:
    # Given a board like those of `make load`: 100 members on 4 shards
    board, ids = _board(service, store, 100, 4)
    reads = metered.service.reads
    reads.top(board, 1, None, False)  # the board's settings, which a function keeps, are read

    for position in (0, 1, 50, 98, 99):
        member = ids[position]
        # When the window of radius 5 around the member and its rank are read
        window_read, around_cost = metered.read(lambda m=member: reads.around(board, m, 5))  # type: ignore[misc]
        _, rank_cost = metered.read(lambda m=member: reads.rank(board, m))  # type: ignore[misc]

        # Then the window is exact, read in one query a shard after the board and the
        # score (its index is read whole), as the rank is: no more requests or read units,
        # at the top, in the middle and at the bottom alike (round trips, which depend on
        # timing here, are bench/around.py's to show)
        start = min(max(0, position - 5), 100 - 11)
        assert [(e.rank, e.member_id) for e in window_read.entries] == [
            (start + n + 1, ids[start + n]) for n in range(11)
        ]
        assert around_cost.requests == 1 + 4 == rank_cost.requests
        assert around_cost.rcu <= rank_cost.rcu


def test_a_window_counted_in_the_tree_costs_a_rank_and_two_queries_a_shard(
    service: Services, store: Database, metered: Metered, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a board of 300 members on 5 shards whose index is too big to read whole (in
    # blocks of 256 bytes), counted in its tree
    monkeypatch.setattr(cost, "BLOCK_BYTES", 256)
    monkeypatch.setattr(indexreads, "COUNT_INDEX_UP_TO", 0)
    board, ids = _board(service, store, 300, 5)
    reads = metered.service.reads
    reads.rank(board, ids[0])  # the board's settings and the tree's shape, which a function keeps

    # When the windows of radius 5 around members at the top, in the middle and at the
    # bottom are read, and their ranks
    for position in (0, 3, 150, 200, 296, 299):
        member = ids[position]
        window_read, around_cost = metered.read(lambda m=member: reads.around(board, m, 5))  # type: ignore[misc]
        _, rank_cost = metered.read(lambda m=member: reads.rank(board, m))  # type: ignore[misc]

        # Then each window is exact, and costs the rank's reads (the board and score, the
        # tree's path) and the keys on either side of the member, gathered beside the count:
        # one query a shard each, of the least billed size (one round is enough on this
        # board), whether the window is at an end of the board or not
        start = min(max(0, position - 5), 300 - 11)
        assert [(e.rank, e.member_id) for e in window_read.entries] == [
            (start + n + 1, ids[start + n]) for n in range(11)
        ], position
        assert around_cost.requests == rank_cost.requests + 2 * 5, position
        assert around_cost.rcu <= rank_cost.rcu + 2 * 5 * 0.5, position
