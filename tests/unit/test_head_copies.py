"""The head's copies (``podium.dal.structures``): written after the primary, never put back
to an older head, owed and written again when a write of one fails, and read by the top
reads of each process, which fall back to the primary when their copy holds none. Here no
stream runs (moto): the head is written by the rebuild and by the upkeep called directly."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import boto3
import pytest

from podium import keys
from podium.config import Settings
from podium.dal import Database, schema
from podium.dal.boards import Boards
from podium.dal.client import Tables
from podium.dal.structures import HeadCopiesBehind
from podium.errors import Throttled
from podium.models import HeadItem
from podium.periods import ALL_TIME
from podium.reads import ReadService
from podium.stream.records import ScoreRecord
from podium.validation import board_request, member_request
from podium.wiring import Services


@pytest.fixture
def service(moto_tables: Settings) -> Services:
    return Services(Database.connect(moto_tables, client=boto3.client("dynamodb", region_name="us-east-1")))


def loaded_board(service: Services, board: str, scores: dict[str, int]) -> None:
    service.boards.put_board(board, board_request({"shards": Decimal(3)}))
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": Decimal(score)}))
    service.maintenance.rebuild_rank_structures(board)


def tables_of(service: Services) -> Tables:
    assert isinstance(service.db, Database)
    return service.db.tables


def copies(service: Services, board: str) -> list[HeadItem | None]:
    return [service.db.structures.get_head_copy(board, ALL_TIME, c) for c in range(schema.HEAD_COPIES)]


def reader(service: Services, copy: int) -> ReadService:
    """The reads of a process that picked ``copy``, keeping nothing."""
    db = service.db
    boards = Boards(tables_of(service), head_copy=copy)
    return ReadService(service.boards, boards, db.members, db.index, db.tree)


def throttling_copies(tables: Tables, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every put of a head copy throttled (past botocore's retries)."""
    put = tables.put

    def refusing(item: dict[str, Any], **conditions: Any) -> bool:
        if item["pk"]["S"].startswith(schema.HEAD_COPY):
            raise Throttled("the database is throttling requests; retry after a short wait")
        return put(item, **conditions)

    monkeypatch.setattr(tables, "put", refusing)


def test_every_head_write_writes_the_copies_with_the_primary(service: Services) -> None:
    # Given a board whose head was built
    loaded_board(service, "copied", {f"m{i}": i for i in range(12)})
    primary = service.db.structures.get_head("copied", ALL_TIME, consistent=True)
    assert primary is not None
    assert primary.version == 1

    # When the head is written again
    service.members.put_member("copied", "top", member_request({"score": Decimal(100)}))
    service.maintenance.rebuild_rank_structures("copied")

    # Then each copy holds the primary's keys and version, and its ttl (none: all-time)
    again = service.db.structures.get_head("copied", ALL_TIME, consistent=True)
    assert again is not None
    assert again.version == 2
    assert copies(service, "copied") == [again] * schema.HEAD_COPIES
    raw = tables_of(service).get(schema.head_copy_key("copied", ALL_TIME, 0), consistent=True)
    assert raw is not None
    assert "ttl" not in raw


def test_a_slow_copy_writer_cannot_put_a_copy_back_to_an_older_head(service: Services) -> None:
    # Given a head written twice: version 1, then version 2 with its copies
    loaded_board(service, "slow", {f"m{i}": i for i in range(12)})
    older = service.db.structures.get_head("slow", ALL_TIME, consistent=True)
    assert older is not None
    service.members.put_member("slow", "top", member_request({"score": Decimal(100)}))
    service.maintenance.rebuild_rank_structures("slow")
    newer = service.db.structures.get_head("slow", ALL_TIME, consistent=True)
    assert newer is not None
    assert newer.version == older.version + 1

    # When the writer of version 1, slowed, writes its copies only now
    service.db.structures.heal_copies("slow", ALL_TIME, replace(older, copies_owed=True), None)

    # Then every copy still holds version 2
    assert copies(service, "slow") == [newer] * schema.HEAD_COPIES


def test_a_throttled_copy_fails_the_batch_and_its_redelivery_writes_the_copies(
    service: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a board whose head is built, and a member climbing to the top, whose record the
    # stream delivers while every copy write is throttled
    loaded_board(service, "throttled", {f"m{i}": i for i in range(12)})
    upkeep = service.aggregator.upkeep
    before = service.db.members.get_score("throttled", "m0", ALL_TIME)
    service.members.put_member("throttled", "m0", member_request({"score": Decimal(100)}))
    after = service.db.members.get_score("throttled", "m0", ALL_TIME)
    assert before is not None
    assert after is not None
    order = keys.order_of(service.boards.settings("throttled"))
    record = ScoreRecord(
        event_id="e1",
        event_name="MODIFY",
        board_id="throttled",
        member_id="m0",
        period=ALL_TIME,
        old=before.score,
        new=after.score,
        old_sort_key=order.sort_key(before.score, "m0", before.reached_at_us),
        new_sort_key=order.sort_key(after.score, "m0", after.reached_at_us),
        changed_us=after.reached_at_us,
    )
    with monkeypatch.context() as patched:
        throttling_copies(tables_of(service), patched)

        # When the aggregator keeps the head
        failed = upkeep.keep_heads([record])

        # Then the record failed (the stream delivers it again), the primary took it and
        # says its copies are owed, and the copies still hold the older head
        assert failed == {"e1"}
        primary = service.db.structures.get_head("throttled", ALL_TIME, consistent=True)
        assert primary is not None
        assert primary.copies_owed
        assert primary.version == 2
        assert primary.keys[0].endswith("#m0")
        assert {c.version for c in copies(service, "throttled") if c is not None} == {1}
        with pytest.raises(HeadCopiesBehind):
            service.maintenance.rebuild_rank_structures("throttled")

    # When the record is delivered again, the copies no longer throttled: the head's
    # content is as the record leaves it already
    assert upkeep.keep_heads([record]) == set()

    # Then the copies hold the primary, and the primary no longer says they are owed
    healed = service.db.structures.get_head("throttled", ALL_TIME, consistent=True)
    assert healed is not None
    assert not healed.copies_owed
    assert copies(service, "throttled") == [healed] * schema.HEAD_COPIES


def test_readers_of_every_copy_answer_the_primary_s_top(service: Services) -> None:
    # Given a board whose head was built
    scores = {f"m{i:02d}": (i * 7) % 23 for i in range(40)}
    loaded_board(service, "readers", scores)
    exact = service.reads.top("readers", 10, None, False, consistent=True)

    for copy in range(schema.HEAD_COPIES):
        # When a process that picked each copy reads the top 10
        read = reader(service, copy).top_read("readers", 10, None, False)

        # Then the head served it (no index read), and it is the exact top
        assert read.stats is None, copy
        assert read.page.entries == exact.entries, copy


def test_a_missing_copy_falls_back_to_the_primary_and_no_head_to_the_index(service: Services) -> None:
    # Given a board whose copies were never written (a head from before the copies)
    scores = {f"m{i:02d}": i for i in range(30)}
    loaded_board(service, "old", scores)
    for copy in range(schema.HEAD_COPIES):
        tables_of(service).delete(schema.head_copy_key("old", ALL_TIME, copy))
    exact = service.reads.top("old", 5, None, False, consistent=True)

    # When a process reads the top
    read = reader(service, 2).top_read("old", 5, None, False)

    # Then the primary head served it, exactly
    assert read.stats is None
    assert read.page.entries == exact.entries

    # And on a board with no head at all, the index serves it, exactly
    service.boards.put_board("new", board_request({"shards": Decimal(3)}))
    for member, score in scores.items():
        service.members.put_member("new", member, member_request({"score": Decimal(score)}))
    fresh = reader(service, 1).top_read("new", 5, None, False)
    assert fresh.stats is not None
    assert fresh.page.entries == exact.entries
