"""The head's copies on DynamoDB Local, kept by the aggregator from the table's stream:
each head write writes the copies after the primary; a writer slowed between the two can
never put a copy back to an older head (the condition is DynamoDB's); the instances, each
reading its own copy, answer the top the primary answers; and an instance whose copy holds
no head reads the primary."""

from __future__ import annotations

import random
from dataclasses import replace
from decimal import Decimal

import pytest

from podium.dal import Database, schema
from podium.dal.boards import Boards
from podium.models import HeadItem
from podium.periods import ALL_TIME
from podium.reads import ReadService
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import TableStream, expected_listing, unique_id

pytestmark = pytest.mark.integration


def apply_stream(service: Services, stream: TableStream, board: str, seen: int) -> int:
    """Every record of ``board`` after the first ``seen``, as the aggregator's batches take
    them; answers how many there are now."""
    records = [r for r in stream.records() if r["dynamodb"]["Keys"]["pk"]["S"].startswith(f"M#{board}#")]
    assert not service.aggregator.keep_batch(records[seen:])
    return len(records)


def reader(store: Database, service: Services, copy: int) -> ReadService:
    """An instance that picked ``copy``, keeping nothing."""
    return ReadService(
        service.boards, Boards(store.tables, head_copy=copy), store.members, store.index, store.tree
    )


def heads(store: Database, board: str) -> tuple[HeadItem | None, list[HeadItem | None]]:
    """The primary and every copy, strongly consistent."""
    primary = store.structures.get_head(board, ALL_TIME, consistent=True)
    return primary, [store.structures.get_head_copy(board, ALL_TIME, c) for c in range(schema.HEAD_COPIES)]


def test_the_stream_keeps_the_copies_and_every_instance_reads_the_primary_s_top(
    service: Services, store: Database, table_stream: TableStream
) -> None:
    # Given a board of 60 members on 3 shards, whose head the stream keeps
    board = unique_id("copies")
    service.boards.put_board(board, board_request({"shards": Decimal(3)}))
    rng = random.Random(7)
    scores = {f"c{i:02d}": Decimal(rng.randrange(0, 1_000)) for i in range(60)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score}))
    seen = apply_stream(service, table_stream, board, 0)
    first, first_copies = heads(store, board)
    assert first is not None
    assert first_copies == [first] * schema.HEAD_COPIES

    # When scores change, a new leader among them, and the stream takes the changes
    for member in rng.sample(sorted(scores), 10):
        scores[member] = Decimal(rng.randrange(0, 2_000))
        service.members.put_member(board, member, member_request({"score": scores[member]}))
    scores["c00"] = Decimal(5_000)
    service.members.put_member(board, "c00", member_request({"score": scores["c00"]}))
    apply_stream(service, table_stream, board, seen)

    # Then every copy holds the primary's newer version
    primary, copies = heads(store, board)
    assert primary is not None
    assert primary.version > first.version
    assert copies == [primary] * schema.HEAD_COPIES

    # And an instance of each copy answers the top from its copy, as the board is
    for copy in range(schema.HEAD_COPIES):
        read = reader(store, service, copy).top_read(board, 20, None, False)
        assert read.stats is None, copy  # the head served it: no shard was queried
        assert [(e.rank, e.member_id, e.score) for e in read.page.entries] == expected_listing(scores)[:20]

    # When the writer of the first version, slowed between the primary and its copies,
    # writes them only now
    store.structures.heal_copies(board, ALL_TIME, replace(first, copies_owed=True), None)

    # Then no copy went back to it
    assert heads(store, board)[1] == [primary] * schema.HEAD_COPIES


def test_an_instance_whose_copy_holds_no_head_reads_the_primary(
    service: Services, store: Database, table_stream: TableStream
) -> None:
    # Given a board whose head was written before there were copies: its copies are gone
    board = unique_id("precopy")
    service.boards.put_board(board, board_request({"shards": Decimal(2)}))
    scores = {f"o{i:02d}": Decimal(i * 3 % 41) for i in range(30)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score}))
    apply_stream(service, table_stream, board, 0)
    for copy in range(schema.HEAD_COPIES):
        store.tables.delete(schema.head_copy_key(board, ALL_TIME, copy))

    # When an instance reads the top
    read = reader(store, service, 3).top_read(board, 10, None, False)

    # Then the primary served it, exactly
    assert read.stats is None
    assert [(e.rank, e.member_id, e.score) for e in read.page.entries] == expected_listing(scores)[:10]
