"""Score bands (``GET .../scores``) on DynamoDB Local, with 1, 3 and 10 shards: every band
read page by page equals a plain sorted list filtered by score, ranks computed here
independently; on a small board (the index counted) in every order and tie rule, the same
board counted in its count tree, and a board of more than ``COUNT_INDEX_UP_TO`` members,
whose first rank comes from its count tree, where a page costs a rank and a page's read."""

from __future__ import annotations

import random
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from bench import load
from podium import indexreads
from podium.bands import Band
from podium.dal import Database
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import Metered, TickingClock, build_count_tree, unique_id
from tests.treestore import small_nodes

pytestmark = pytest.mark.integration

SHARDS = (1, 3, 10)
SMALL = 40
BIG = indexreads.COUNT_INDEX_UP_TO + 152  # past the index's count: the tree counts
Entry = tuple[int, str, Decimal]


def model_listing(
    scores: dict[str, Decimal], joined: dict[str, int], descending: bool, earliest: bool
) -> list[Entry]:
    """The board's listing by the API's ranking rules: better first; ties by member id
    sharing a rank, or (earliest) by who reached the score first, ranked by position."""
    sign = -1 if descending else 1
    ordered = sorted(scores, key=lambda m: (sign * scores[m], joined[m] if earliest else 0, m))
    ranked = []
    for position, member in enumerate(ordered, start=1):
        better = sum(1 for s in scores.values() if sign * s < sign * scores[member])
        ranked.append((position if earliest else better + 1, member, scores[member]))
    return ranked


def in_band(listing: list[Entry], least: Decimal | None, most: Decimal | None) -> list[Entry]:
    return [e for e in listing if (least is None or e[2] >= least) and (most is None or e[2] <= most)]


def walk(service: Services, board: str, band: Band, limit: int) -> list[Entry]:
    """Every entry of the band, page after page through nextCursor."""
    found: list[Entry] = []
    cursor = None
    while True:
        page = service.bands.scores(board, band, limit, cursor)
        found.extend((e.rank, e.member_id, e.score) for e in page.entries)
        if page.next_cursor is None:
            return found
        assert len(page.entries) == limit
        cursor = page.next_cursor


def bands(scores: dict[str, Decimal], rng: random.Random) -> Iterator[tuple[Decimal | None, Decimal | None]]:
    """Open ends, ends at scores members hold (ties at the ends), ends between scores, an
    empty band, one score alone."""
    held = sorted(set(scores.values()))
    yield None, None
    yield held[len(held) // 3], None
    yield None, held[len(held) // 2]
    yield held[1], held[-2]
    yield held[2], held[2]
    yield held[0] - 1, held[0] - Decimal("0.5")
    for _ in range(4):
        low, high = sorted(rng.sample(held, 2))
        yield low + Decimal("0.01"), high


@pytest.fixture(scope="module", params=SHARDS, ids=lambda s: f"{s}-shards")
def shards(request: pytest.FixtureRequest) -> int:
    shard_count: int = request.param
    return shard_count


@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("tie_break", ["shared", "earliest"])
@pytest.mark.parametrize("counted_in", ["the index", "the count tree"])
def test_every_band_of_a_small_board_is_the_sorted_list_filtered(
    store: Database, shards: int, order: str, tie_break: str, counted_in: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a board of 40 members in ties, negative and decimal scores among them, written in
    # a shuffled order, counted from its index or (nodes of 3) in its count tree
    service = Services(store, clock=TickingClock())
    board = unique_id("band")
    body = {"shards": Decimal(shards), "order": order, "tieBreak": tie_break}
    service.boards.put_board(board, board_request(body))
    rng = random.Random(f"{shards}{order}{tie_break}")
    scores = {f"b{i:02d}": Decimal(rng.randint(-12, 12)) / 4 for i in range(SMALL)}
    joined = {}
    for turn, member in enumerate(rng.sample(sorted(scores), SMALL)):
        service.members.put_member(board, member, member_request({"score": scores[member]}))
        joined[member] = turn
    store.boards.apply_member_count("count-" + board, board, SMALL)
    if counted_in == "the count tree":
        with small_nodes(leaf_max=3, fanout=3):
            build_count_tree(service, board)
        monkeypatch.setattr(indexreads, "COUNT_INDEX_UP_TO", 0)
    listing = model_listing(scores, joined, order == "desc", tie_break == "earliest")

    for number, (least, most) in enumerate(bands(scores, rng)):
        # When the band is read with pages of 3 and 100 (and the whole board of 1 too: each
        # page boundary once, between ties and not)
        for limit in (1, 3, 100) if number == 0 else (3, 100):
            # Then it is the sorted list's entries whose score is in the band, ranks and all
            assert walk(service, board, Band(least, most), limit) == in_band(listing, least, most), (
                least,
                most,
                limit,
            )


@pytest.fixture(scope="module")
def big_board(store: Database, dynamodb_client: Any, shards: int) -> tuple[str, dict[str, Decimal]]:
    """A board of ``BIG`` members loaded in bulk (the score items the service writes), with
    its member count and count tree as the stream keeps them."""
    service = Services(store)
    board = unique_id("big-band")
    service.boards.put_board(board, board_request({"shards": Decimal(shards)}))
    population = load.Population(seed=shards)
    population.grow(BIG)

    class Quiet:
        def update(self, _: int) -> None: ...

    settings = service.boards.settings(board)
    load.grow_board(dynamodb_client, store, board, settings, population, 0, BIG, Quiet(), profiles=False)
    store.boards.apply_member_count("count-" + board, board, BIG)
    build_count_tree(service, board)
    return board, {load.member_id(i): Decimal(score) for i, score in enumerate(population.scores)}


def test_bands_of_a_big_board_are_exact_and_ranked_from_the_count_tree(
    big_board: tuple[str, dict[str, Decimal]], service: Services, metered: Metered, shards: int
) -> None:
    # Given a board of more than COUNT_INDEX_UP_TO members, which counts in its count tree
    board, scores = big_board
    read = service.reads._read(board, None)
    assert not service.reads.counting.reads_index(read.total)
    listing = model_listing(scores, {}, descending=True, earliest=False)
    held = [entry[2] for entry in listing]  # best first

    # When bands at the top, in the middle and at the bottom are read page by page (their
    # ends at scores members hold), and the first page of each is measured beside the rank
    # of its first member and a page of the top of the same size
    reads = metered.service
    reads.reads.top(board, 10, None, False, consistent=True)  # the settings and tree shape, kept
    for start, end in ((0, 30), (1000, 1100), (BIG - 40, BIG - 1)):
        band = Band(least=held[end], most=held[start])
        expected = in_band(listing, band.least, band.most)
        assert walk(service, board, band, 25) == expected

        reads.bands.scores(board, band, 10, None)  # the tree's shape on this path, which a function keeps
        page, band_cost = metered.read(lambda b=band: reads.bands.scores(board, b, 10, None))  # type: ignore[misc]
        first = page.entries[0].member_id
        _, rank_cost = metered.read(lambda m=first: reads.reads.rank(board, m))  # type: ignore[misc]
        _, top_cost = metered.read(lambda: reads.reads.top(board, 10, None, False, consistent=True))

        # Then each is exact, its first page is ranked as the band's first member is, and it
        # costs that rank's count beside a gather of the page (what a page of top reads): at
        # most two rounds of one query a shard besides the rank's requests
        assert [(e.rank, e.member_id, e.score) for e in page.entries] == expected[:10]
        assert page.total == BIG
        assert rank_cost.requests + shards <= band_cost.requests <= rank_cost.requests + 2 * shards
        assert band_cost.rcu <= rank_cost.rcu + 2 * top_cost.rcu, (band_cost, rank_cost, top_cost)
