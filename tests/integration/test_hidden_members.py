"""Hiding a member, against DynamoDB Local and its real change stream (every batch
delivered twice): every ranking, the head, the count tree and the counts agree with a
plain sorted list of the members that are not hidden; a hidden member's submissions are applied
unseen, and an unhide puts it back exactly at its current score."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from podium.config import Settings
from podium.dal import Database
from podium.errors import NotFound
from podium.keys import member_of_key
from podium.stream.aggregate import Aggregator
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import TickingClock, expected_listing, unique_id, walk
from tests.integration.test_rank_structures import (
    Stream,
    assert_tree_counts_the_index,
    deliver,
    stepping_clock,
)
from tests.treestore import small_nodes

pytestmark = pytest.mark.integration


@pytest.fixture
def small_tree() -> Iterator[None]:
    """A count tree of nodes of 4, so that 60 members split it into several levels."""
    with small_nodes(4, 4):
        yield


def deliver_twice(aggregator: Aggregator, stream: Stream) -> None:
    """What the stream holds now, applied, then applied again (a redelivered batch)."""
    stream.fetch()
    batch = stream.take(len(stream.pending))
    deliver(aggregator, batch)
    deliver(aggregator, batch)


def hide(service: Services, board: str, member: str, hidden: bool) -> None:
    service.members.put_member(board, member, member_request({"hidden": hidden}))


def assert_rankings_are(service: Services, store: Database, board: str, shown: dict[str, Decimal]) -> None:
    """Every ranking of the board is the sorted list of ``shown``, and nothing else."""
    expected = expected_listing(shown)
    entries, _ = walk(service, board, 7)
    assert entries == expected
    for limit in (1, 6, 50):  # the head's pages, kept by the stream
        head_page = service.reads.top(board, limit, None, False)
        assert [(e.rank, e.member_id, e.score) for e in head_page.entries] == expected[:limit]
        assert head_page.total == len(shown)
    for rank, member, _ in expected:
        assert service.reads.rank(board, member)["rank"] == rank, member
        assert service.reads.rank(board, member, consistent=True)["rank"] == rank, member
    assert service.boards.get_board(board).member_count == len(shown)
    listed = assert_tree_counts_the_index(store, board)
    assert len(listed) == len(shown)


def test_hide_then_unhide_restores_exact_ranks_with_the_submissions_made_meanwhile(
    store: Database,
    local_tables: Settings,
    dynamodb_client: Any,
    dynamodb_endpoint: str,
    small_tree: None,
    head_in_small_sizes: None,
) -> None:
    # Given a board of 60 members on 3 shards whose head, count tree and count the stream
    # keeps
    rng = random.Random(11)
    clock = stepping_clock()
    service = Services(store, clock=clock)
    aggregator = Aggregator(store, service.boards.settings, clock)
    board = unique_id("hidden")
    service.boards.put_board(board, board_request({"shards": 3}))
    stream = Stream(dynamodb_client, dynamodb_endpoint, local_tables.table_name, board)
    scores: dict[str, Decimal] = {}
    for index in range(60):
        member = f"h{index:02d}"
        scores[member] = Decimal(rng.randrange(40))  # few values: many ties
        service.members.put_member(board, member, member_request({"score": scores[member]}))
    leader = "h07"
    scores[leader] = Decimal(1000)
    service.members.put_member(board, leader, member_request({"score": scores[leader]}))
    deliver_twice(aggregator, stream)
    assert_rankings_are(service, store, board, scores)

    # When the leader and 9 others are hidden, and the hidden and the shown submit scores
    hidden = {leader, *rng.sample(sorted(set(scores) - {leader}), 9)}
    for member in sorted(hidden):
        hide(service, board, member, True)
    for member in rng.sample(sorted(scores), 30):
        change = service.members.submit_score(board, member, Decimal(rng.randrange(-5, 20)))
        scores[member] = change.score
    deliver_twice(aggregator, stream)

    # Then every ranking is that of the members still shown: the index, the head, the
    # ranks, the count tree and the count
    shown = {m: s for m, s in scores.items() if m not in hidden}
    assert_rankings_are(service, store, board, shown)
    # and a hidden member has no rank, no window, and is left out of several ranks
    for member in hidden:
        with pytest.raises(NotFound):
            service.reads.rank(board, member)
        with pytest.raises(NotFound):
            service.reads.around(board, member, 2)
        read = service.members.get_member(board, member)
        assert (read.hidden, read.score) == (True, scores[member])  # its submissions applied
    asked = sorted(hidden)[:3] + sorted(shown)[:3]
    assert [e.member_id for e in service.reads.ranks(board, asked)] == [
        m for _, m, _ in expected_listing(shown) if m in asked
    ]
    window = service.reads.around(board, sorted(shown)[0], 3)
    assert not {e.member_id for e in window.entries} & hidden

    # When they are shown again (one of them twice: a repeated PUT changes nothing)
    for member in sorted(hidden):
        hide(service, board, member, False)
    hide(service, board, leader, False)
    deliver_twice(aggregator, stream)

    # Then every ranking is the whole board again, at the scores reached while hidden
    assert_rankings_are(service, store, board, scores)
    assert not any(service.members.get_member(board, m).hidden for m in scores)


def test_a_hide_reaches_every_readable_period_and_the_first_score_of_a_new_one(
    store: Database,
    local_tables: Settings,
    dynamodb_client: Any,
    dynamodb_endpoint: str,
) -> None:
    # Given a daily board keeping 2 past periods, where a member scored on 3 days (in the
    # future: the periods' items expire by DynamoDB's TTL, which DynamoDB Local applies too)
    clock = TickingClock(datetime(2030, 1, 10, 12, 0, tzinfo=UTC), timedelta(microseconds=10))
    service = Services(store, clock=clock)
    aggregator = Aggregator(store, service.boards.settings, clock)
    board = unique_id("hidden-daily")
    service.boards.put_board(board, board_request({"shards": 2, "reset": "daily", "retainPeriods": 2}))
    stream = Stream(dynamodb_client, dynamodb_endpoint, local_tables.table_name, board)
    days = ["2030-01-10", "2030-01-11", "2030-01-12"]
    for day_index, day in enumerate(days):
        clock.moment = datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC)
        for member in ("cheat", "ana", "bob"):
            if day_index == 0:
                service.members.put_member(board, member, member_request({}))
            service.members.submit_score(board, member, Decimal(10 + day_index + len(member)))
    deliver_twice(aggregator, stream)

    def listing(day: str) -> list[str]:
        page = service.reads.top(board, 10, None, False, requested_period=day, consistent=True)
        assert page.total == len(page.entries)  # the period's count follows the index
        tree = assert_tree_counts_the_index(store, board, day)  # and so does the period's tree
        assert [member_of_key(k) for k in tree] == [e.member_id for e in page.entries]
        return [e.member_id for e in page.entries]

    assert [listing(day) for day in days] == [["cheat", "ana", "bob"]] * 3

    # When the member is hidden on the last day, then submits on the next (its first
    # score of that period, written while hidden)
    hide(service, board, "cheat", True)
    clock.moment = datetime(2030, 1, 13, 12, 0, tzinfo=UTC)
    service.members.submit_score(board, "cheat", Decimal(99))
    service.members.submit_score(board, "ana", Decimal(5))
    deliver_twice(aggregator, stream)

    # Then it is out of every period a read can ask for, the new one included, and each
    # period's count left it out; its score of the new day was applied all the same
    for day in [*days[1:], "2030-01-13"]:
        assert "cheat" not in listing(day), day
    assert listing("2030-01-13") == ["ana"]
    assert service.members.get_member(board, "cheat").score == Decimal(99)

    # When it is shown again
    hide(service, board, "cheat", False)
    deliver_twice(aggregator, stream)

    # Then it is back in every readable period, at its scores, the new day's too
    assert listing("2030-01-13") == ["cheat", "ana"]
    for day in days[1:]:
        assert listing(day) == ["cheat", "ana", "bob"], day


def test_a_hidden_members_changes_still_reach_its_rollup_targets(
    service: Services, local_tables: Settings, dynamodb_client: Any, dynamodb_endpoint: str
) -> None:
    # Given a source rolling up into two increment boards, on one of which the member is
    # hidden too
    source, shown_target, hidden_target = unique_id("src"), unique_id("all"), unique_id("all-hid")
    service.boards.put_board(shown_target, board_request({}))
    service.boards.put_board(hidden_target, board_request({}))
    service.boards.put_board(
        source, board_request({"rollupTo": [shown_target, hidden_target]}, own_id=source)
    )
    service.members.put_member(hidden_target, "cheat", member_request({"hidden": True}))
    stream = Stream(dynamodb_client, dynamodb_endpoint, local_tables.table_name, source)

    # When the member scores on the source, is hidden there, and scores again
    service.members.put_member(source, "cheat", member_request({"score": Decimal(10)}))
    service.members.put_member(source, "ana", member_request({"score": Decimal(3)}))
    hide(service, source, "cheat", True)
    service.members.submit_score(source, "cheat", Decimal(5))
    aggregator = Aggregator(service.db, service.boards.settings, service.clock)
    stream.fetch()
    batch = stream.take(len(stream.pending))
    for record in batch + batch:  # delivered twice
        aggregator.apply(record)

    # Then both targets took every change once, the one made while hidden included
    for target in (shown_target, hidden_target):
        assert service.members.get_member(target, "cheat").score == Decimal(15)
    # and the member is ranked where it is not hidden, and hidden where it is
    listed = service.reads.top(shown_target, 10, None, False, consistent=True).entries
    assert [(e.member_id, e.score) for e in listed] == [("cheat", Decimal(15)), ("ana", Decimal(3))]
    assert service.members.get_member(shown_target, "cheat").hidden is False
    listed = service.reads.top(hidden_target, 10, None, False, consistent=True).entries
    assert [e.member_id for e in listed] == ["ana"]
    assert service.members.get_member(hidden_target, "cheat").hidden is True
    # while on the source it stays out of the ranking
    assert [e.member_id for e in service.reads.top(source, 10, None, False, consistent=True).entries] == [
        "ana"
    ]
