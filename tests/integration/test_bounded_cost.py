"""Every request bounded in cost, on DynamoDB Local: the reads that used to cost thousands of
read units stay within the bound of 500 (as DynamoDB Local bills them, with DynamoDB's
minimums: ``bench.measure``), and their answers stay exact against plain sorted lists."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from podium import cost, indexreads, snapshots
from podium.dal import Database
from podium.errors import Conflict
from podium.indexreads import tree_units
from podium.models import Notification, RankedEntry, Snapshot
from podium.reads import VIEW_UNITS
from podium.validation import board_request, events_request, member_request
from podium.wiring import Services
from tests.helpers import Metered, TickingClock, build_count_tree, expected_listing, unique_id
from tests.treestore import small_nodes

pytestmark = pytest.mark.integration

BIG_DATA = 64 * 1024 - 64  # characters of data: just under the API's 64 KiB once serialised


def _data_of(member: str) -> dict[str, Any]:
    index = int(member[1:])
    return {"blob": "x" * BIG_DATA} if index < 70 else {"n": index}


def _refused(read: Callable[[], Any]) -> None:
    with pytest.raises(Conflict):
        read()


def _ranked(entries: list[RankedEntry]) -> list[tuple[int, str, Decimal]]:
    return [(e.rank, e.member_id, e.score) for e in entries]


def test_pages_with_big_and_small_data_stay_within_the_bound_and_list_everyone(
    service: Services, metered: Metered
) -> None:
    # Given a board of 100 shards whose best 70 members hold 64 KiB of data each (their
    # profiles alone are 600 read units) and whose next 150 hold a few bytes
    board = unique_id("data")
    service.boards.put_board(board, board_request({"shards": Decimal(100)}))
    scores = {f"m{i:03d}": Decimal(400 - i) for i in range(220)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score, "data": _data_of(member)}))

    # When the listing is read 1,000 at a time with data
    listed: list[tuple[int, str, Decimal]] = []
    cursor = None
    costs = []
    while True:
        page, sample = metered.read(
            lambda c=cursor: metered.service.reads.top(board, 1000, c, True, consistent=True)  # type: ignore[misc]
        )
        costs.append(sample.rcu)
        assert page.entries, "a page makes progress"
        assert all(e.data == _data_of(e.member_id) for e in page.entries)
        listed += _ranked(page.entries)
        cursor = page.next_cursor
        if cursor is None:
            break

    # Then every page read at most 500 read units, and together they list every member once,
    # in order, with its rank
    assert max(costs) <= cost.READ_BOUND, costs
    assert len(costs) >= 2  # 70 profiles of 64 KiB cannot be read in one page within the bound
    assert listed == expected_listing(scores)


def test_a_board_of_small_data_gives_whole_pages_with_data(service: Services, metered: Metered) -> None:
    # Given a board of 10 shards whose 600 members hold a few bytes of data each
    board = unique_id("small-data")
    service.boards.put_board(board, board_request({"shards": Decimal(10)}))
    scores = {f"m{i:03d}": Decimal(1000 - i) for i in range(600)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score, "data": {"n": member}}))

    # When the top 1,000 is read with data
    page, sample = metered.read(lambda: metered.service.reads.top(board, 1000, None, True, consistent=True))

    # Then one page lists all 600 with their data, within the bound: the board records
    # that its data is small, so profiles are read 100 at a time
    assert _ranked(page.entries) == expected_listing(scores)
    assert all(e.data == {"n": e.member_id} for e in page.entries)
    assert page.next_cursor is None
    assert sample.rcu <= cost.READ_BOUND
    assert service.boards.get_board(board).largest_data == len('{"n":"m000"}')


def test_ranks_of_100_members_on_100_shards_read_the_count_tree_within_the_bound(
    service: Services, store: Database, metered: Metered, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a board of 100 shards and 300 members with tied scores, its count tree whole, and
    # counted from its tree as a board past COUNT_INDEX_UP_TO is (a board this small is
    # counted from the index, which shows a write at once: 300 entries on 100 shards, 151.5 RCU)
    monkeypatch.setattr(indexreads, "COUNT_INDEX_UP_TO", 100)
    board = unique_id("friends")
    service.boards.put_board(board, board_request({"shards": Decimal(100)}))
    scores = {f"f{i:03d}": Decimal(i % 120) for i in range(300)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score}))
    store.boards.apply_member_count("count-" + board, board, len(scores))
    build_count_tree(service, board)
    friends = [f"f{i:03d}" for i in range(0, 300, 3)]
    reads = metered.service.reads
    reads.top(board, 1, None, False)  # the board's settings, which a function keeps, are read

    # When the ranks of 100 of them (and an unknown id) are read, by a function that has not
    # read the tree yet and again by one that has
    cold, first = metered.read(lambda: reads.ranks(board, [*friends, "nobody"]))
    warm, again = metered.read(lambda: reads.ranks(board, [*friends, "nobody"]))

    # Then they are the sorted list's, and no shard is queried (not one query per member and
    # shard: 10,000 queries and 5,000 read units, nor one pass over the index: 100): the
    # board, the scores (two BatchGetItems) and the tree's paths, a level a round when cold,
    # in one BatchGetItem when warm, well within the bound
    expected = [entry for entry in expected_listing(scores) if entry[1] in friends]
    assert _ranked(cold) == _ranked(warm) == expected
    assert first.requests == 1 + 2 + 2  # a tree of two levels: the root, then its leaves
    assert again.requests == 1 + 2 + 1
    assert first.rcu <= cost.READ_BOUND
    assert again.rcu <= cost.READ_BOUND
    assert again.rcu < 100 * 1.0 + 50  # the scores, strongly consistent, and a few nodes


@pytest.fixture(scope="module")
def treed(store: Database) -> tuple[str, dict[str, Decimal]]:
    """A board of 150 members on 7 shards, with a count tree of nodes of 4 entries and 3
    children (several levels; built from the index)."""
    service = Services(store, clock=TickingClock())
    board = unique_id("treed")
    service.boards.put_board(board, board_request({"shards": Decimal(7)}))
    scores = {f"g{i:03d}": Decimal((i * 37) % 90) / 2 for i in range(150)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score}))
    with small_nodes(leaf_max=4, fanout=3):
        build_count_tree(service, board)
    store.boards.apply_member_count("count-" + board, board, len(scores))
    return board, scores


@pytest.mark.parametrize("block", [1, 64, 4096])
def test_counts_from_the_tree_are_exact_for_every_read(
    treed: tuple[str, dict[str, Decimal]], metered: Metered, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    # Given a board whose every count goes through its tree of several levels, and blocks of
    # any size (so that around reads the whole index, or counts beside the gathers)
    monkeypatch.setattr(indexreads, "COUNT_INDEX_UP_TO", 0)
    monkeypatch.setattr(cost, "BLOCK_BYTES", block)
    board, scores = treed

    # When ranks, the windows around members and pages after a cursor are read
    listing = expected_listing(scores)
    reads = metered.service.reads
    for step in (1, 3, 10, 40):
        chosen = [member for _, member, _ in listing[::step]][:100]
        assert _ranked(reads.ranks(board, chosen)) == [e for e in listing if e[1] in chosen]
    for position in (0, 37, 149):
        member = listing[position][1]
        assert reads.rank(board, member)["rank"] == listing[position][0]
        window = reads.around(board, member, 3)
        start = min(max(0, position - 3), len(listing) - 7)
        assert _ranked(window.entries) == listing[start : start + 7]
    first = reads.top(board, 20, None, False, consistent=True)
    after = reads.top(board, 30, first.next_cursor, False)
    assert _ranked(after.entries) == listing[20:50]


def test_consistent_rank_counts_the_index_near_the_top_and_the_tree_deep_down(
    service: Services, store: Database, metered: Metered, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a board of 120 members on one shard, its tree whole, blocks of 64 bytes (an
    # entry is two), and a bound that lets consistent=true count the index from the top only
    # above about its 30th member, once the tree's path (read strongly consistent) is paid
    monkeypatch.setattr(indexreads, "COUNT_INDEX_UP_TO", 0)
    monkeypatch.setattr(cost, "BLOCK_BYTES", 64)
    board = unique_id("deep")
    service.boards.put_board(board, board_request({"shards": Decimal(1)}))
    scores = {f"d{i:03d}": Decimal(i) for i in range(120)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score}))
    build_count_tree(service, board)
    store.boards.apply_member_count("count-" + board, board, len(scores))
    listing = expected_listing(scores)
    reader = metered.service.reads
    path = reader.counting.tree.count(board, "all", ["~"], consistent=True)
    monkeypatch.setattr(cost, "READ_BOUND", VIEW_UNITS + tree_units(path) + 0.5 * 30 * 2)

    # When the first, a middle and the last member's ranks are read with consistent=true
    found = {}
    for position in (0, 20, 60, 119):
        member = listing[position][1]
        answer, sample = metered.read(lambda m=member: reader.rank(board, m, consistent=True))  # type: ignore[misc]
        found[position] = (answer["rank"], sample.items_read)

    # Then every rank is exact; near the top the index is counted (it reads the entries
    # above), deep down the tree answers (its path, whatever the depth)
    assert {p: rank for p, (rank, _) in found.items()} == {p: listing[p][0] for p in found}
    assert found[20][1] >= 20
    assert found[60][1] < 20
    assert found[119][1] < 20


def _events(member: str, count: int, prefix: str | None) -> Iterator[Any]:
    for start in range(0, count, 100):
        body = [
            {"memberId": member, "value": Decimal(1), **({"eventId": f"{prefix}-{n}"} if prefix else {})}
            for n in range(start, min(start + 100, count))
        ]
        yield events_request({"events": body})


def _one_event_pages(service: Services, board: str, member: str, count: int) -> None:
    """``count`` requests of one event each, as the log holds them once claimed: a page each
    (the most pages a number of events can take), written 100 to a transaction."""
    from podium.models import EventPage

    period = service.boards.period(service.boards.settings(board), None)
    pages = [EventPage(board, member, period, f"{n:032x}", True, Decimal(1), 1) for n in range(count)]
    for start in range(0, count, 100):
        service.db.eventlog.log_pages(pages[start : start + 100], 2**31)


def test_a_fresh_read_counts_what_the_bound_lets_it_read_and_refuses_the_rest(
    service: Services, metered: Metered, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given members with events not folded yet (nothing folds them here): 200 with ids in
    # two requests, and 1,000 in requests of one event each (a page each)
    board = unique_id("fresh")
    service.boards.put_board(board, board_request({"shards": Decimal(2)}))
    for member in ("few", "many"):
        service.members.put_member(board, member, member_request({"score": Decimal(5)}))
    for request in _events("few", 200, "few-id"):
        service.members.log_events(board, request)
    _one_event_pages(service, board, "many", 1000)

    # When each is read fresh, with a bound that lets a fresh read read some 800 pages
    monkeypatch.setattr(cost, "READ_BOUND", 40.0)
    (few, pending), cheap = metered.read(lambda: metered.service.members.fresh_member(board, "few"))
    with pytest.raises(Conflict, match="more events waiting to be folded") as refused:
        metered.read(lambda: metered.service.members.fresh_member(board, "many"))

    # Then the first is the folded score plus every event, within the bound; the second is
    # refused (409: read again once the fold has caught up) before it reads past the bound
    assert (few.score, pending) == (Decimal(205), 200)
    assert cheap.rcu <= 40.0
    assert "retry" in str(refused.value)
    _, sample = metered.read(lambda: _refused(lambda: metered.service.members.fresh_member(board, "many")))
    assert sample.rcu <= 40.0

    # and with the usual bound it is answered: every event counted
    monkeypatch.setattr(cost, "READ_BOUND", 500.0)
    (many, pending), sample = metered.read(lambda: metered.service.members.fresh_member(board, "many"))
    assert (many.score, pending) == (Decimal(1005), 1000)
    assert sample.rcu <= 500.0


def test_expired_notifications_and_snapshots_are_not_read(service: Services, metered: Metered) -> None:
    # Given an inbox of 200 notifications past their 30 days (DynamoDB removes expired
    # items within days, not at once) and 5 live ones, and a board with 30 snapshots past
    # their retention and 3 live ones
    now = datetime.now(UTC)
    board = unique_id("expired")
    joined = Services(service.db, clock=lambda: now - timedelta(days=60))
    joined.boards.put_board(board, board_request({"shards": Decimal(2)}))
    joined.members.put_member(board, "reader", member_request({}))
    day_us = 86_400_000_000
    now_us = int(now.timestamp() * 1_000_000)
    moments = [now_us - 55 * day_us + n * 1000 for n in range(200)] + [now_us - n * 1000 for n in range(1, 6)]
    for n, moment in enumerate(moments):
        note = Notification(
            f"{n:032x}", "overtaken", board, "reader", "rival", Decimal(1), Decimal(2), moment
        )
        service.db.social.put_notification(note, 30 * 86_400)
    entries = [RankedEntry(1, "m", Decimal(1))]
    taken = [now - timedelta(days=200, minutes=n) for n in range(30)] + [
        now - timedelta(minutes=n) for n in range(3)
    ]
    for when in taken:
        at = when.replace(microsecond=0)
        shot = Snapshot(board, snapshots.snapshot_id(board, at), at, 1, entries)
        service.db.snapshots.put_snapshot(shot, int(at.timestamp()) + 90 * 86_400)

    # When the inbox and the snapshots are listed
    (inbox, more), read_inbox = metered.read(
        lambda: metered.service.social.notifications(board, "reader", 100, None)
    )
    (shots, further), read_shots = metered.read(
        lambda: snapshots.list_snapshots(metered.service, board, 100, None)
    )

    # Then only the live ones are listed, and the expired ones are not even read
    assert [n.notification_id for n in inbox] == [f"{n:032x}" for n in range(200, 205)]
    assert (more, further) == (None, None)
    assert len(shots) == 3
    assert read_inbox.items_read <= 5 + 2  # the member's profile and the live notifications
    assert read_shots.items_read <= 3 + 2  # the board and the live snapshots


def test_the_domain_s_copies_of_store_constants_agree() -> None:
    from podium import events
    from podium.dal import schema

    assert events.LOG_PARTITIONS == schema.EVENT_BUCKETS
    assert math.isclose(cost.units(4096), 0.5)
    assert math.isclose(cost.units(4097, consistent=True), 2.0)
