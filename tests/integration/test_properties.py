"""Property tests: the sharded service on DynamoDB Local agrees with a plain sorted list.

Hypothesis draws boards (order, operator, tie-break, shard counts from 1 to more than
the members), members with decimal and negative scores, submissions and deletes; then
every read (top with random page sizes, rank, around, ranks) is compared with a model
that is nothing but a dict and ``sorted``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from podium import numbers
from podium.errors import NotFound
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import unique_id

pytestmark = pytest.mark.integration

MEMBERS = [f"m{i}" for i in range(9)] + ["M.9", "a@b", "z~"]
# Few distinct values, so that ties (at page edges too) are common; decimals and negatives.
values = st.sampled_from(
    [Decimal(v) for v in ("0", "1", "-1", "2.5", "2.50", "-3.75", "10", "82.3", "0.001")]
)


@dataclass
class Model:
    order: str
    operator: str
    tie_break: str
    scores: dict[str, Decimal] = field(default_factory=dict)
    reached: dict[str, int] = field(default_factory=dict)
    tick: int = 0

    def _set(self, member: str, score: Decimal) -> None:
        if member not in self.scores or self.scores[member] != score:
            self.tick += 1
            self.reached[member] = self.tick
        self.scores[member] = score

    def put(self, member: str, score: Decimal | None) -> None:
        if member not in self.scores:
            self._set(member, score if score is not None else Decimal(0))
        elif score is not None:
            self._set(member, score)

    def submit(self, member: str, value: Decimal) -> Decimal:
        old = self.scores[member]
        if self.operator == "increment":
            new = numbers.add(old, value)
        elif self.operator == "best":
            new = max(old, value) if self.order == "desc" else min(old, value)
        else:
            new = value
        self._set(member, new)
        return new

    def delete(self, member: str) -> None:
        self.scores.pop(member, None)
        self.reached.pop(member, None)

    def _better_key(self, member: str) -> Decimal:
        score = self.scores[member]
        return -score if self.order == "desc" else score

    def listing(self) -> list[tuple[int, str, Decimal]]:
        if self.tie_break == "earliest":
            ordered = sorted(self.scores, key=lambda m: (self._better_key(m), self.reached[m]))
        else:
            ordered = sorted(self.scores, key=lambda m: (self._better_key(m), m))
        return [(self.rank(m), m, self.scores[m]) for m in ordered]

    def rank(self, member: str) -> int:
        if self.tie_break == "earliest":
            key = (self._better_key(member), self.reached[member])
            return 1 + sum(1 for m in self.scores if (self._better_key(m), self.reached[m]) < key)
        return 1 + sum(1 for m in self.scores if self._better_key(m) < self._better_key(member))


operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.sampled_from(MEMBERS), st.one_of(st.none(), values)),
        st.tuples(st.just("submit"), st.sampled_from(MEMBERS), values),
        st.tuples(st.just("delete"), st.sampled_from(MEMBERS), st.none()),
    ),
    min_size=1,
    max_size=24,
)


@settings(
    max_examples=35,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    order=st.sampled_from(["desc", "asc"]),
    operator=st.sampled_from(["increment", "best", "set"]),
    tie_break=st.sampled_from(["shared", "earliest"]),
    shards=st.sampled_from([1, 2, 3, 7, 20]),
    ops=operations,
    page_size=st.integers(1, 5),
    radius=st.integers(0, 4),
    friends=st.lists(st.sampled_from([*MEMBERS, "ghost"]), min_size=1, max_size=6),
)
def test_sharded_board_matches_a_sorted_list(
    service: Services,
    order: str,
    operator: str,
    tie_break: str,
    shards: int,
    ops: list[tuple[str, str, Decimal | None]],
    page_size: int,
    radius: int,
    friends: list[str],
) -> None:
    # Given a board and the same operations applied to it and to the model
    board = unique_id("prop")
    service.boards.put_board(
        board,
        board_request(
            {"order": order, "operator": operator, "tieBreak": tie_break, "shards": Decimal(shards)}
        ),
    )
    model = Model(order, operator, tie_break)
    for kind, member, value in ops:
        if kind == "put":
            service.members.put_member(
                board, member, member_request({} if value is None else {"score": value})
            )
            model.put(member, value)
        elif kind == "submit":
            assert value is not None
            if member in model.scores:
                change = service.members.submit_score(board, member, value)
                assert change.score == model.submit(member, value)
            else:
                with pytest.raises(NotFound):
                    service.members.submit_score(board, member, value)
        else:
            service.members.delete_member(board, member)
            model.delete(member)

    expected = model.listing()

    # When the whole listing is read page by page
    listed: list[tuple[int, str, Decimal]] = []
    cursor = None
    while True:
        page = service.reads.top(board, page_size, cursor, with_data=False)
        listed.extend((e.rank, e.member_id, e.score) for e in page.entries)
        cursor = page.next_cursor
        if cursor is None:
            break
        assert len(page.entries) == page_size

    # Then it is exactly the model's listing, ranks included, with no skip or repeat
    assert listed == expected

    # And every member's rank and window agree with the model
    for position, (rank, member, score) in enumerate(expected):
        answer = service.reads.rank(board, member)
        assert (answer["rank"], answer["score"]) == (rank, score)
        window = service.reads.around(board, member, radius).entries
        size = min(2 * radius + 1, len(expected))
        start = min(max(0, position - radius), len(expected) - size)
        assert [(e.rank, e.member_id, e.score) for e in window] == expected[start : start + size]

    # And a friends leaderboard lists the known ids once, in listing order
    unique_friends = list(dict.fromkeys(friends))
    friend_entries = service.reads.ranks(board, unique_friends)
    assert [(e.rank, e.member_id, e.score) for e in friend_entries] == [
        entry for entry in expected if entry[1] in unique_friends
    ]


def _listing_key(model: Model, member: str) -> tuple[Decimal, int | str]:
    order = model.reached[member] if model.tie_break == "earliest" else member
    return (model._better_key(member), order)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    tie_break=st.sampled_from(["shared", "earliest"]),
    shards=st.sampled_from([1, 3, 7]),
    ops=operations,
    changes=operations,
    page_size=st.integers(1, 4),
)
def test_each_page_after_a_cursor_ranks_the_board_as_it_is_then(
    service: Services,
    tie_break: str,
    shards: int,
    ops: list[tuple[str, str, Decimal | None]],
    changes: list[tuple[str, str, Decimal | None]],
    page_size: int,
) -> None:
    # Given a set-board and the model
    board = unique_id("prop-pages")
    service.boards.put_board(
        board, board_request({"operator": "set", "tieBreak": tie_break, "shards": Decimal(shards)})
    )
    model = Model("desc", "set", tie_break)

    def apply(kind: str, member: str, value: Decimal | None) -> None:
        if kind == "delete":
            service.members.delete_member(board, member)
            model.delete(member)
        elif kind == "submit" and member in model.scores:
            assert value is not None
            service.members.submit_score(board, member, value)
            model.submit(member, value)
        elif kind != "submit":
            service.members.put_member(
                board, member, member_request({} if value is None else {"score": value})
            )
            model.put(member, value)

    for op in ops:
        apply(*op)

    # When the listing is read page by page while the board changes between pages
    page = service.reads.top(board, page_size, None, with_data=False, consistent=True)
    assert [(e.rank, e.member_id, e.score) for e in page.entries] == model.listing()[:page_size]
    pending = list(changes)
    while page.next_cursor is not None:
        last = page.entries[-1]
        cursor_key = (-last.score, last.member_id if tie_break == "shared" else model.reached[last.member_id])
        if pending:
            apply(*pending.pop(0))
        page = service.reads.top(board, page_size, page.next_cursor, with_data=False)

        # Then each page holds the entries that follow the cursor's place in the board as
        # it is now, each with its rank now
        following = [entry for entry in model.listing() if _listing_key(model, entry[1]) > cursor_key]
        assert [(e.rank, e.member_id, e.score) for e in page.entries] == following[:page_size]
