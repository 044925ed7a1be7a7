"""Score bands (``GET .../scores``) against a plain model: for random boards (asc and
desc, shared and earliest ranks, negative and decimal scores, ties at the band's ends,
hidden members), every band read page by page with cursors of random limits equals the
board's members sorted and filtered by score, with ranks computed here independently."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import boto3
import pytest

from podium import numbers
from podium.bands import Band
from podium.config import Settings
from podium.dal import Database
from podium.errors import ValidationError
from podium.keys import RankOrder
from podium.validation import board_request, member_request, query_score, score_band
from podium.wiring import Services
from tests.helpers import TickingClock, unique_id

Entry = tuple[int, str, Decimal]


@dataclass
class Model:
    """A board as a user sees it: each visible member's score and when it reached it."""

    descending: bool
    earliest: bool
    scores: dict[str, Decimal]
    reached: dict[str, int]

    def better(self, a: Decimal, b: Decimal) -> bool:
        return a > b if self.descending else a < b

    def listing(self) -> list[Entry]:
        """Every member, best first, with its rank by the API's ranking rules."""
        ordered = sorted(
            self.scores,
            key=lambda m: (
                -self.scores[m] if self.descending else self.scores[m],
                self.reached[m] if self.earliest else 0,
                m,
            ),
        )
        ranked = []
        for position, member in enumerate(ordered, start=1):
            score = self.scores[member]
            rank = position if self.earliest else 1 + sum(self.better(s, score) for s in self.scores.values())
            ranked.append((rank, member, score))
        return ranked

    def band(self, least: Decimal | None, most: Decimal | None) -> list[Entry]:
        return [
            e for e in self.listing() if (least is None or e[2] >= least) and (most is None or e[2] <= most)
        ]


def random_board(rng: random.Random, service: Services, db: Database) -> tuple[str, Model]:
    """A board of 15 to 40 members with scores from a small pool (so that ties are many),
    negative and decimal ones among them, written in a shuffled order; a few hidden."""
    order, tie_break = rng.choice(["asc", "desc"]), rng.choice(["shared", "earliest"])
    board = unique_id("band")
    body = {"order": order, "tieBreak": tie_break, "shards": Decimal(rng.choice([1, 2, 3, 5]))}
    service.boards.put_board(board, board_request(body))
    pool = [Decimal(n) / 4 for n in range(-8, 9)] + [Decimal("-0.001"), Decimal("1e-5"), Decimal("123.456")]
    scores = {f"m{i:02d}": rng.choice(pool) for i in range(rng.randint(15, 40))}
    reached = {}
    for turn, member in enumerate(rng.sample(sorted(scores), len(scores))):
        service.members.put_member(board, member, member_request({"score": scores[member]}))
        reached[member] = turn
    for member in rng.sample(sorted(scores), 3):
        service.members.put_member(board, member, member_request({"hidden": True}))
        del scores[member]
    db.boards.apply_member_count("count-" + board, board, len(scores))
    return board, Model(order == "desc", tie_break == "earliest", scores, reached)


def read_band(
    service: Services, board: str, band: Band, limits: Callable[[], int]
) -> tuple[list[Entry], set[int]]:
    """Every entry of the band, page after page through nextCursor; the totals answered."""
    entries: list[Entry] = []
    totals = set()
    cursor = None
    while True:
        limit = limits()
        page = service.bands.scores(board, band, limit, cursor)
        assert len(page.entries) <= limit
        entries.extend((e.rank, e.member_id, e.score) for e in page.entries)
        totals.add(page.total)
        if page.next_cursor is None:
            return entries, totals
        assert len(page.entries) == limit  # a page short of its limit ends the band
        cursor = page.next_cursor


@pytest.fixture
def services(moto_tables: Settings) -> tuple[Services, Database]:
    db = Database.connect(moto_tables, client=boto3.client("dynamodb", region_name="us-east-1"))
    return Services(db, clock=TickingClock()), db


@pytest.mark.parametrize("seed", range(8))
def test_every_band_is_the_sorted_list_filtered_by_score(
    seed: int, services: tuple[Services, Database]
) -> None:
    # Given a random board and its model
    service, db = services
    rng = random.Random(seed)
    board, model = random_board(rng, service, db)
    present = sorted(set(model.scores.values()))
    candidates: list[Decimal | None] = [None, *present, Decimal("-3.3"), Decimal("0.1"), Decimal(5)]
    for _ in range(12):
        # When a band is read, its ends often scores that members hold (ties at the ends),
        # page by page with random limits
        least, most = rng.choice(candidates), rng.choice(candidates)
        if least is not None and most is not None and least > most:
            least, most = most, least
        found, totals = read_band(service, board, Band(least, most), lambda: rng.randint(1, 7))

        # Then it is the listing's entries whose score is in the band, in order, ranks and all
        assert found == model.band(least, most), (least, most)
        assert totals == {len(model.scores)}


def test_a_cursor_belongs_to_its_band_and_route(services: tuple[Services, Database]) -> None:
    # Given a board of ten members and a cursor of the band 2..8, and one of top
    service, _ = services
    board = unique_id("band")
    service.boards.put_board(board, board_request({"shards": Decimal(3)}))
    for n in range(10):
        service.members.put_member(board, f"m{n}", member_request({"score": Decimal(n)}))
    band_cursor = service.bands.scores(board, Band(Decimal(2), Decimal(8)), 2, None).next_cursor
    top_cursor = service.reads.top(board, 2, None, False, consistent=True).next_cursor
    assert band_cursor is not None
    assert top_cursor is not None

    # When another band, or the band with top's cursor, is read: then each is refused
    other_band, same_band = Band(Decimal(2), Decimal(7)), Band(Decimal(2), Decimal(8))
    for band, cursor in ((other_band, band_cursor), (same_band, top_cursor)):
        with pytest.raises(ValidationError, match="cursor"):
            service.bands.scores(board, band, 2, cursor)
    # and the same band spelled otherwise (8.0 is 8) goes on where it was
    page = service.bands.scores(board, Band(Decimal("2.00"), Decimal("8.0")), 2, band_cursor)
    assert [(e.rank, e.member_id) for e in page.entries] == [(4, "m6"), (5, "m5")]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("82.30", "82.3"),
        ("-5", "-5"),
        ("0", "0"),
        ("1e3", "1000"),
        ("-0.001", "-0.001"),
        ("1E-130", "1e-130"),
    ],
)
def test_a_bound_is_read_exactly_as_a_score(raw: str, expected: str) -> None:
    # Given a bound as a query string holds it, then it is that exact decimal
    found = query_score({"min": raw}, "min")
    assert found == Decimal(expected)
    assert isinstance(found, Decimal)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "abc",
        "NaN",
        "Infinity",
        "1e30",
        "-1e30",
        " 1",
        "1.",
        ".5",
        "0x10",
        "+1",
        "1" * 39,
        "1e999999999",
        "1e-131",
    ],
)
def test_a_bad_bound_is_refused_naming_it(raw: str) -> None:
    # Given a bound that is not a score the API would take, then it is 400 naming the parameter
    with pytest.raises(ValidationError, match=r"^max"):
        query_score({"max": raw}, "max")


def test_min_above_max_is_refused_and_equal_ends_are_a_band() -> None:
    with pytest.raises(ValidationError, match="min"):
        score_band({"min": "10.5", "max": "10.25"})
    assert score_band({"min": "10.50", "max": "10.5"}) == (Decimal("10.5"), Decimal("10.5"))
    assert score_band({}) == (None, None)


@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("earliest", [True, False])
def test_score_end_separates_a_score_and_the_better_ones_from_the_worse(
    descending: bool, earliest: bool
) -> None:
    # Given random scores, their sort keys, and the end of a band at one of them
    rng = random.Random(int(descending) * 2 + int(earliest))
    order = RankOrder(descending=descending, earliest=earliest)
    pool = [Decimal(rng.randint(-(10**6), 10**6)).scaleb(rng.randint(-8, 8)) for _ in range(150)]
    pool += [Decimal(n) for n in ("0", "1", "10", "1.5", "-1", "-1.5", "-10")]
    for end in pool[:60]:
        bound = order.score_end(end)
        for score in pool:
            key = order.sort_key(numbers.check_score(score, "s"), "m-1", 10**15)
            # Then exactly the keys of that score or a better one sort below it
            better_or_equal = score >= end if descending else score <= end
            assert (key < bound) == better_or_equal, (end, score)
