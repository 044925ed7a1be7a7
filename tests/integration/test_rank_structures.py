"""The head and the score buckets, kept from DynamoDB Local's real change stream, agree
with a plain sorted list: while buckets split under changes that are still in flight,
when records are delivered twice, and after a rebuild from the index."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from devstack.streams import StreamTail
from podium import buckets, cost, indexreads
from podium.config import Settings
from podium.dal import Database
from podium.errors import NotFound
from podium.stream.aggregate import Aggregator
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import TickingClock, expected_listing, unique_id, walk

pytestmark = pytest.mark.integration


def stepping_clock() -> TickingClock:
    """Moves 7 ms forward per read, so a few hundred writes span several seconds and the
    stream's changes fall before, around and after the buckets' snapshots."""
    return TickingClock(datetime(2026, 11, 22, 12, 0, tzinfo=UTC), timedelta(milliseconds=7))


@pytest.fixture
def small_buckets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Buckets of a few members, so that a board of hundreds splits many times, and the
    bucket path answers every rank (not the direct COUNT kept for small boards)."""
    monkeypatch.setattr(buckets, "SPLIT_AT", 12)
    monkeypatch.setattr(buckets, "REBUILD_SIZE", 6)
    monkeypatch.setattr(indexreads, "COUNT_INDEX_UP_TO", 0)
    # Every byte billed: the buckets, which read inside one bucket, are always the cheaper
    # way to count, and consistent=true is always cheap enough to count the index itself.
    monkeypatch.setattr(cost, "BLOCK_BYTES", 1)
    monkeypatch.setattr(cost, "READ_BOUND", math.inf)


class Stream:
    """Hands out the board's stream records in order, a part at a time, from those written
    after it was made (the shared stream holds the whole session)."""

    def __init__(self, client: Any, endpoint: str, table: str, board: str) -> None:
        self.tail = StreamTail.of_table(client, endpoint, table)
        self.tail.read()  # what came before belongs to other tests
        self.board = board
        self.pending: list[dict[str, Any]] = []

    def fetch(self) -> None:
        prefix = f"M#{self.board}#"
        self.pending += [r for r in self.tail.read() if r["dynamodb"]["Keys"]["pk"]["S"].startswith(prefix)]

    def take(self, count: int) -> list[dict[str, Any]]:
        taken, self.pending = self.pending[:count], self.pending[count:]
        return taken


def deliver(aggregator: Aggregator, batch: list[dict[str, Any]]) -> None:
    assert aggregator.keep_heads(batch) == set()
    for record in batch:
        aggregator.apply(record)


def assert_buckets_count_the_index(store: Database, board: str, members: int) -> None:
    keys = sorted(
        k for shard in range(3) for k in store.index.keys_in_range(f"{board}#all#{shard}", "", None)
    )
    assert len(keys) == members
    layout = store.structures.list_buckets(board, "all", consistent=True)
    for index, bucket in enumerate(layout):
        high = buckets.upper_bound(layout, index)
        assert bucket.count == sum(1 for k in keys if k >= bucket.lo and (high is None or k < high)), bucket


def expected_rank(scores: dict[str, Decimal], member: str) -> int:
    return 1 + sum(1 for other in scores.values() if other > scores[member])


def test_buckets_and_head_stay_exact_while_they_split_under_changes_in_flight(
    store: Database,
    local_tables: Settings,
    dynamodb_client: Any,
    dynamodb_endpoint: str,
    small_buckets: None,
    head_in_small_sizes: None,
) -> None:
    # Given a board of 160 members on 3 shards whose scores change, some members leave,
    # and the stream is applied a random part at a time (some parts twice) while it goes on
    # (the head holds 8 keys and its ladder reaches 40: both change all the time)
    rng = random.Random(5)
    clock = stepping_clock()
    service = Services(store, clock=clock)
    aggregator = Aggregator(store, service.boards.settings, clock)
    board = unique_id("buckets")
    service.boards.put_board(board, board_request({"shards": 3, "operator": "set"}))
    stream = Stream(dynamodb_client, dynamodb_endpoint, local_tables.table_name, board)
    scores: dict[str, Decimal] = {}
    for round_ in range(4):
        for index in range(40):
            member = f"p{round_}-{index}"
            scores[member] = Decimal(rng.randrange(60))  # few values: many ties
            service.members.put_member(board, member, member_request({"score": scores[member]}))
        for member in rng.sample(sorted(scores), 30):
            scores[member] = Decimal(rng.randrange(60))
            service.members.submit_score(board, member, scores[member])
        for member in rng.sample(sorted(scores), 5):
            service.members.delete_member(board, member)
            del scores[member]
        stream.fetch()
        batch = stream.take(rng.randrange(len(stream.pending) // 2, len(stream.pending)))
        deliver(aggregator, batch)
        # a retry replays the batch from a failed record on: it counts once
        deliver(aggregator, batch[len(batch) // 3 :])

    # When the rest of the stream arrives
    stream.fetch()
    deliver(aggregator, stream.take(len(stream.pending)))

    # Then the buckets split (some splits may still wait to settle), partition the members,
    # and every rank from them is exact
    layout = store.structures.list_buckets(board, "all", consistent=True)
    assert len(layout) > 5
    assert [b.lo for b in layout] == sorted(b.lo for b in layout)
    for member in rng.sample(sorted(scores), 40):
        assert service.reads.rank(board, member)["rank"] == expected_rank(scores, member), member
        assert service.reads.rank(board, member, consistent=True)["rank"] == expected_rank(scores, member)

    # and each bucket counts exactly the index entries in its range
    assert_buckets_count_the_index(store, board, len(scores))

    # When writes have left the buckets alone for a while and the scheduled job finishes
    # the splits that no record came to finish
    clock.moment += timedelta(seconds=10)
    service.maintenance.finish_splits(board)

    # Then no split is left half-way, the counts are still exact, and so are the ranks
    layout = store.structures.list_buckets(board, "all", consistent=True)
    assert not any(b.splitting for b in layout)
    assert len(layout) > 10
    assert_buckets_count_the_index(store, board, len(scores))
    for member in rng.sample(sorted(scores), 40):
        assert service.reads.rank(board, member)["rank"] == expected_rank(scores, member), member
    # and the head answers the first pages exactly like the index does
    assert store.structures.get_head(board, "all") is not None
    for limit in (1, 7, 10, 50, 100):
        from_head = service.reads.top(board, limit, None, False)
        from_index = service.reads.top(board, limit, None, False, consistent=True)
        assert from_head.entries == from_index.entries
        assert from_head.next_cursor == from_index.next_cursor
    # and every page read from the index, steered by that head's ladder (whose counts the
    # batches delivered twice have moved twice), is the sorted board
    for limit in (3, 10):
        entries, most_rounds = walk(service, board, limit)
        assert entries == expected_listing(scores)
        assert most_rounds <= 2
    # and ranks of several members at once, and a window around one, agree too
    friends = rng.sample(sorted(scores), 12)
    for entry in service.reads.ranks(board, friends):
        assert entry.rank == expected_rank(scores, entry.member_id)
    member = rng.choice(sorted(scores))
    window = service.reads.around(board, member, 3)
    assert member in [e.member_id for e in window.entries]
    for entry in window.entries:
        assert entry.rank == expected_rank(scores, entry.member_id)


def test_the_head_follows_departures_from_the_top_and_refills_from_the_index(
    service: Services,
    store: Database,
    local_tables: Settings,
    dynamodb_client: Any,
    dynamodb_endpoint: str,
) -> None:
    # Given a board of 140 members whose head the stream keeps
    board = unique_id("head")
    service.boards.put_board(board, board_request({"shards": 4}))
    aggregator = Aggregator(store, service.boards.settings, service.clock)
    stream = Stream(dynamodb_client, dynamodb_endpoint, local_tables.table_name, board)
    for index in range(140):
        service.members.put_member(board, f"m{index:03d}", member_request({"score": Decimal(index)}))
    stream.fetch()
    deliver(aggregator, stream.take(len(stream.pending)))
    head = store.structures.get_head(board, "all")
    assert head is not None
    assert len(head.keys) == 128

    # When the 60 best members leave and others climb
    for index in range(80, 140):
        service.members.delete_member(board, f"m{index:03d}")
    service.members.submit_score(board, "m000", Decimal(1000))
    stream.fetch()
    deliver(aggregator, stream.take(len(stream.pending)))

    # Then the head was refilled, and its pages are the index's
    head = store.structures.get_head(board, "all")
    assert head is not None
    assert head.complete
    assert len(head.keys) == 80
    top = service.reads.top(board, 100, None, False)
    assert [e.member_id for e in top.entries][:2] == ["m000", "m079"]
    assert top.entries == service.reads.top(board, 100, None, False, consistent=True).entries
    assert top.next_cursor is None
    assert top.total == 80


def test_a_rebuild_from_the_index_gives_exact_ranks_and_head(
    service: Services, store: Database, small_buckets: None
) -> None:
    # Given a board whose scores were written without a stream consumer (a bulk load)
    board = unique_id("rebuilt")
    service.boards.put_board(board, board_request({"shards": 5, "tieBreak": "earliest", "order": "asc"}))
    rng = random.Random(11)
    scores = {f"r{i}": Decimal(rng.randrange(40)) / 4 for i in range(90)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score}))

    # When the head and the buckets are rebuilt
    count = service.maintenance.rebuild_rank_structures(board)

    # Then ranks from the buckets equal the index's count, and the head its first page
    assert count == 15
    for member in scores:
        assert service.reads.rank(board, member) == service.reads.rank(board, member, consistent=True)
    assert service.reads.top(board, 100, None, False) == service.reads.top(
        board, 100, None, False, consistent=True
    )
    with pytest.raises(NotFound):
        service.reads.rank(board, "nobody")
