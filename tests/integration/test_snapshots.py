"""Scheduled snapshots on DynamoDB Local: what a run records, what a retried run does,
and how the listing pages.

A run snapshots every board of the table, so each test has tables of its own, in a
database of its own (``own_database``): it sees its own boards only, and the other tests'
boards and streams do not slow it down.
"""

from __future__ import annotations

import random
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from devstack import template as template_module
from devstack.stack import create_tables
from podium import snapshots
from podium.dal import Database
from podium.errors import ValidationError
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.conftest import OwnDatabase
from tests.helpers import unique_id

pytestmark = pytest.mark.integration

KEEP_DAYS = 90


@pytest.fixture
def store(own_database: OwnDatabase) -> Database:
    """The template's tables in a database of this test's own (overrides the shared store)."""
    client = own_database.client()
    spec = template_module.read(f"snap{uuid.uuid4().hex[:8]}-")
    create_tables(client, spec)
    settings = spec.settings()
    return Database.connect(settings, client=client)


def _board(service: Services, members: dict[str, Any], **settings: Any) -> str:
    board = unique_id("snap")
    service.boards.put_board(board, board_request({"shards": Decimal(3), **settings}))
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(
            pool.map(
                lambda member: service.members.put_member(
                    board, member, member_request({"score": Decimal(members[member])})
                ),
                members,
            )
        )
    return board


def _now() -> datetime:
    """A scheduled time: whole seconds, UTC (TTLs count from real time, so no fixed date)."""
    return datetime.now(UTC).replace(microsecond=0)


def _stored(store: Database, board: str) -> list[dict[str, Any]]:
    """Every snapshot item of the board, as the table holds it."""
    response = store.tables.client.query(
        TableName=store.tables.table_for(f"S#{board}"),
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": f"S#{board}"}},
        ConsistentRead=True,
    )
    return list(response["Items"])


def test_a_run_records_every_board_s_top_100_and_member_count(service: Services, store: Database) -> None:
    # Given a board of 105 members (more than a snapshot holds), an asc board with decimal
    # scores and ties, and an empty board; the stream would keep memberCount, here we set it
    big = _board(service, {f"m{i:03d}": i % 37 for i in range(105)}, shards=Decimal(4))
    laps = _board(
        service, {"ana": "61.25", "bo": "59.5", "cy": "61.25", "dee": "70"}, order="asc", tieBreak="shared"
    )
    empty = _board(service, {})
    store.boards.apply_member_count(unique_id("evt"), big, 105)
    store.boards.apply_member_count(unique_id("evt"), laps, 4)
    taken_at = _now()

    # When a run is taken
    report = snapshots.take_snapshots(service, taken_at, KEEP_DAYS)

    # Then each board has one snapshot: its top 100 and memberCount, at the scheduled time
    assert sorted(report.written) == sorted([big, laps, empty])
    assert not report.existing
    assert not report.failed
    for board, count, size in ((big, 105, 100), (laps, 4, 4), (empty, 0, 0)):
        found, cursor = snapshots.list_snapshots(service, board, 10, None)
        assert cursor is None
        [snapshot] = found
        top = service.reads.top(board, 100, None, with_data=False)
        assert snapshot.entries == top.entries
        assert len(snapshot.entries) == size
        assert snapshot.member_count == count == service.boards.get_board(board).member_count
        assert snapshot.taken_at == taken_at
        assert snapshot.snapshot_id == snapshots.snapshot_id(board, taken_at)
    [laps_snapshot], _ = snapshots.list_snapshots(service, laps, 10, None)
    assert [(e.rank, e.member_id, e.score) for e in laps_snapshot.entries] == [
        (1, "bo", Decimal("59.5")),
        (2, "ana", Decimal("61.25")),
        (2, "cy", Decimal("61.25")),
        (4, "dee", Decimal(70)),
    ]


def test_a_retried_run_with_the_same_time_writes_nothing_new(service: Services, store: Database) -> None:
    # Given a run recorded a board
    board = _board(service, {"ana": 10, "bo": 20})
    taken_at = _now()
    first = snapshots.take_snapshots(service, taken_at, KEEP_DAYS)
    assert first.written == [board]
    item = _stored(store, board)

    # When the board changes, and the run is retried with the same scheduled time
    service.members.submit_score(board, "ana", Decimal(15))
    retry = snapshots.take_snapshots(service, taken_at, KEEP_DAYS)

    # Then the retry writes nothing: the snapshot is the first one, unchanged
    assert (retry.written, retry.existing) == ([], [board])
    assert _stored(store, board) == item
    [snapshot], _ = snapshots.list_snapshots(service, board, 10, None)
    assert [(e.member_id, e.score) for e in snapshot.entries] == [("bo", Decimal(20)), ("ana", Decimal(10))]


def test_a_failing_board_does_not_stop_the_others_and_the_retry_fills_it_in(
    service: Services, store: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given three boards, one of which cannot be read
    boards = [_board(service, {"ana": i}) for i in range(3)]
    broken = {boards[1]}
    top = service.reads.top

    def flaky_top(board_id: str, *args: Any, **kwargs: Any) -> Any:
        if board_id in broken:
            raise ConnectionError("the ranking index is unreachable")
        return top(board_id, *args, **kwargs)

    monkeypatch.setattr(service.reads, "top", flaky_top)
    taken_at = _now()

    # When a run is taken, the broken board fails it, after the others are recorded
    with pytest.raises(snapshots.SnapshotsFailed) as raised:
        snapshots.take_snapshots(service, taken_at, KEEP_DAYS)
    assert set(raised.value.failed) == broken
    assert boards[1] in str(raised.value)
    assert [len(_stored(store, board)) for board in boards] == [1, 0, 1]

    # And Lambda's retry of the same event records only the board that was missing
    broken.clear()
    retry = snapshots.take_snapshots(service, taken_at, KEEP_DAYS)
    assert retry.written == [boards[1]]
    assert sorted(retry.existing) == sorted([boards[0], boards[2]])
    assert [len(_stored(store, board)) for board in boards] == [1, 1, 1]


def test_the_listing_pages_newest_first_without_skipping_or_repeating(
    service: Services, store: Database
) -> None:
    # Given seven snapshots of a board, recorded out of order, and one past its TTL
    board = _board(service, {"ana": 1})
    start = _now() - timedelta(hours=1)
    times = [start + timedelta(minutes=5 * i) for i in range(7)]
    keep = int(time.time()) + 3600
    for moment in random.sample(times, len(times)):
        assert snapshots.take_snapshot(service, board, moment, keep)
    assert snapshots.take_snapshot(service, board, start - timedelta(minutes=5), int(time.time()) - 1)

    # When the listing is read three at a time
    pages = []
    cursor = None
    while True:
        found, cursor = snapshots.list_snapshots(service, board, 3, cursor)
        pages.append([s.taken_at for s in found])
        if cursor is None:
            break

    # Then it is newest first, in pages of 3, 3 and 1, each snapshot once; the expired one
    # (which DynamoDB has not removed yet) is not listed
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [moment for page in pages for moment in page] == sorted(times, reverse=True)
    assert len(_stored(store, board)) == 8

    # And a cursor is this board's: another board's, or a made-up one, is a 400
    _, first_cursor = snapshots.list_snapshots(service, board, 1, None)
    assert first_cursor is not None
    other = _board(service, {})
    for cursor_text in (first_cursor, "not-a-cursor", "Zm9v"):
        with pytest.raises(ValidationError, match="cursor"):
            snapshots.list_snapshots(service, other if cursor_text == first_cursor else board, 1, cursor_text)
