"""The consistency checker on DynamoDB Local: boards built through the services, with the
real change stream applied by the real consumers (their count trees in nodes of 4, so that
they split), are found consistent; each structure corrupted by hand is named, exactly,
repaired, and then found consistent again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from podium import counttree, keys
from podium.config import Settings
from podium.consistency import ConsistencyReport, Difference, Kind
from podium.dal import Database, schema
from podium.stream.records import is_event_insert
from podium.validation import board_request, events_request, member_request
from podium.wiring import Services
from tests.helpers import TickingClock, small_head, stream_tail_from_now, table_of, unique_id, verify_board
from tests.treestore import small_nodes

pytestmark = pytest.mark.integration


class Stream:
    """The board's stream records, applied by the aggregator and the fold as Lambda would
    (``functions/aggregator``), until none is left: a fold's score writes are records too."""

    def __init__(self, service: Services, client: Any, endpoint: str, table: str, board: str) -> None:
        self.service = service
        self.tail = stream_tail_from_now(client, endpoint, table)  # what came before is others'
        self.prefixes = (f"M#{board}#", f"P#{board}#")
        self.delivered = 0

    def settle(self) -> None:
        while True:
            records = [
                r for r in self.tail.read() if r["dynamodb"]["Keys"]["pk"]["S"].startswith(self.prefixes)
            ]
            if not records:
                return
            self.delivered += len(records)
            aggregator = self.service.aggregator
            assert self.service.folder.fold(records) | aggregator.keep_heads(records) == set()
            for record in records:
                if not is_event_insert(record):
                    aggregator.apply(record)


@dataclass
class Board:
    board_id: str
    service: Services
    stream: Stream
    scores: dict[str, Decimal]  # the shown members' scores (the model)
    hidden: set[str]

    def check(self, *, repair: bool = False, period: str | None = None) -> ConsistencyReport:
        checker = self.service.checker
        checker.settle = self.stream.settle
        return checker.check(self.board_id, period=period, repair=repair)


@pytest.fixture
def new_stream(
    store: Database, local_tables: Settings, dynamodb_client: Any, dynamodb_endpoint: str
) -> Callable[[Services, str], Stream]:
    def make(service: Services, board: str) -> Stream:
        return Stream(service, dynamodb_client, dynamodb_endpoint, local_tables.table_name, board)

    return make


def build_board(service: Services, stream: Stream, board: str, members: int = 16) -> Board:
    """A never-resetting board of ``members`` members on 3 shards, built as a game would:
    members added, scores submitted, events logged and folded, one member hidden, one
    hidden and shown again, one deleted; the stream applied."""
    service.boards.put_board(board, board_request({"shards": Decimal(3)}))
    scores = {f"m{i:02d}": Decimal(i * 7 % 23) for i in range(members)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score, "data": {"n": member}}))
    for member in ("m01", "m02", "m03"):
        service.members.submit_score(board, member, Decimal("2.5"))
        scores[member] += Decimal("2.5")
    service.members.log_events(
        board,
        events_request(
            {"events": [{"memberId": "m04", "value": Decimal(3)}, {"memberId": "m05", "value": Decimal(1)}]}
        ),
    )
    scores["m04"] += 3
    scores["m05"] += 1
    service.members.put_member(board, "m06", member_request({"hidden": True}))
    service.members.put_member(board, "m07", member_request({"hidden": True}))
    service.members.put_member(board, "m07", member_request({"hidden": False}))
    service.members.submit_score(board, "m06", Decimal(100))  # applies, unseen
    service.members.delete_member(board, "m08")
    del scores["m06"], scores["m08"]
    stream.settle()
    return Board(board, service, stream, scores, {"m06"})


@pytest.fixture(autouse=True)
def small_tree() -> Iterator[None]:
    """Count trees of nodes of 4: a board of a dozen members has inner nodes."""
    with small_nodes(4, 4):
        yield


@pytest.fixture
def board(service: Services, new_stream: Callable[[Services, str], Stream]) -> Board:
    board_id = unique_id("checked")
    return build_board(service, new_stream(service, board_id), board_id)


def kinds(report: ConsistencyReport) -> list[tuple[Kind, str | None]]:
    return by_kind(report.differences)


def by_kind(differences: list[Difference]) -> list[tuple[Kind, str | None]]:
    """The differences' (kind, member), in order of kind, those of no member first."""
    return sorted(((d.kind, d.member_id) for d in differences), key=lambda d: (d[0], d[1] or ""))


def test_a_board_built_through_the_services_is_consistent(
    board: Board, local_tables: Settings, dynamodb_endpoint: str
) -> None:
    # Given the board built and its stream applied (a fixture)
    # When it is checked (by the helper the fault and load tests use)
    report = verify_board(local_tables, board.board_id, endpoint=dynamodb_endpoint)

    # Then nothing differs, and what it counted is the model's
    assert report.ok, report.differences
    assert report.period == "all"
    assert report.counts["members"] == len(board.scores) + len(board.hidden)
    assert report.counts["hidden"] == 1
    assert report.counts["indexEntries"] == len(board.scores)
    assert report.counts["treeNodes"] > 4
    # and the index it found consistent ranks the model's members by the model's scores
    top = board.service.reads.top(board.board_id, 100, None, False, consistent=True)
    assert [(e.member_id, e.score) for e in top.entries] == sorted(
        board.scores.items(), key=lambda item: (-item[1], item[0])
    )
    assert board.service.boards.get_board(board.board_id).member_count == len(board.scores)


def test_a_board_whose_head_has_a_ladder_and_whose_tree_split_is_consistent(
    store: Database, new_stream: Callable[[Services, str], Stream]
) -> None:
    # Given a board of 40 members, with a head of 8 keys and a ladder, and a count tree of
    # nodes of 4 that splits as members come and scores move
    clock = TickingClock()
    service = Services(store, clock=clock)
    with small_head():
        board_id = unique_id("split")
        stream = new_stream(service, board_id)
        board = build_board(service, stream, board_id, members=40)
        clock.moment += timedelta(seconds=10)
        for index in range(0, 40, 3):
            member = f"m{index:02d}"
            if member in board.scores:
                service.members.submit_score(board_id, member, Decimal(index))
        stream.settle()

        # When it is checked
        report = board.check()

    # Then nothing differs, and there was something to check
    assert report.ok, report.differences
    assert report.counts["treeNodes"] > 12
    assert report.counts["headKeys"] == 8


def test_a_daily_board_is_checked_in_each_of_its_periods(
    store: Database,
    new_stream: Callable[[Services, str], Stream],
    dynamodb_client: Any,
    local_tables: Settings,
) -> None:
    # Given a daily board (lowest time first, ties to whoever got there first) with scores
    # on two days, and a member hidden on the second
    clock = TickingClock(datetime(2026, 11, 22, 20, 0, tzinfo=UTC), timedelta(milliseconds=1))
    service = Services(store, clock=clock)
    board_id = unique_id("daily")
    stream = new_stream(service, board_id)
    settings = {
        "shards": Decimal(2),
        "reset": "daily",
        "order": "asc",
        "tieBreak": "earliest",
        "operator": "best",
    }
    service.boards.put_board(board_id, board_request(settings))
    for index in range(8):
        service.members.put_member(board_id, f"r{index}", member_request({"score": Decimal(60 + index % 3)}))
    clock.moment = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    for index in range(0, 8, 2):
        service.members.submit_score(board_id, f"r{index}", Decimal(55 + index))
    service.members.put_member(board_id, "r2", member_request({"hidden": True}))
    stream.settle()
    checker = service.checker
    checker.settle = stream.settle

    # When each period is checked
    today = checker.check(board_id)
    yesterday = checker.check(board_id, period="previous")

    # Then both are consistent, each with its own members
    assert (today.ok, today.period, today.counts["scores"]) == (True, "2026-11-23", 4)
    assert (yesterday.ok, yesterday.period, yesterday.counts["scores"]) == (True, "2026-11-22", 8)
    assert today.counts["indexEntries"] == 3  # r2 is hidden, in every period
    assert yesterday.counts["indexEntries"] == 7

    # When the first day's count is one off
    dynamodb_client.update_item(
        TableName=local_tables.state_table,
        Key={"pk": {"S": f"B#{board_id}"}, "sk": {"S": "COUNT#2026-11-22"}},
        UpdateExpression="ADD memberCount :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )

    # Then a check of that day names it, and a check of the other day does not
    found = checker.check(board_id, period="2026-11-22")
    assert kinds(found) == [(Kind.PERIOD_COUNT, None)]
    assert "the count of period 2026-11-22 is 8; 7 members" in found.differences[0].detail
    assert checker.check(board_id).ok
    # and a repair puts it right
    repaired = checker.check(board_id, period="2026-11-22", repair=True)
    assert repaired.ok
    assert kinds(repaired) == []
    assert [d.kind for d in repaired.repaired] == [Kind.PERIOD_COUNT]
    assert service.reads.top(board_id, 10, None, False, "2026-11-22").total == 7


# -- each structure corrupted by hand ---------------------------------------------------------


@dataclass
class Raw:
    """The table, written around the service (as a bug, or a lost stream record, would)."""

    client: Any
    tables: Settings

    def update(
        self,
        pk: str,
        sk: str,
        expression: str,
        values: dict[str, Any] | None = None,
        names: dict[str, str] | None = None,
    ) -> None:
        request: dict[str, Any] = {
            "TableName": table_of(self.tables, pk),
            "Key": {"pk": {"S": pk}, "sk": {"S": sk}},
            "UpdateExpression": expression,
        }
        if values:
            request["ExpressionAttributeValues"] = values
        if names:
            request["ExpressionAttributeNames"] = names
        self.client.update_item(**request)

    def get(self, pk: str, sk: str) -> dict[str, Any]:
        item = self.client.get_item(
            TableName=table_of(self.tables, pk), Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
        )
        return dict(item["Item"])

    def put(self, item: dict[str, Any]) -> None:
        self.client.put_item(TableName=table_of(self.tables, item["pk"]["S"]), Item=item)

    def query(self, pk: str) -> list[dict[str, Any]]:
        request = {
            "TableName": table_of(self.tables, pk),
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
        }
        return list(self.client.query(**request)["Items"])


def placement(board: Board, member: str, score: Decimal, reached_us: int = 1) -> tuple[str, str]:
    settings = board.service.boards.settings(board.board_id)
    partition = keys.rank_partition_key(board.board_id, "all", keys.shard_of(member, settings.shards))
    return partition, keys.order_of(settings).sort_key(score, member, reached_us)


def drop_index_entry(board: Board, raw: Raw) -> None:
    raw.update(f"M#{board.board_id}#m10", "SCORE#all", "REMOVE rpk, rsk")


def wrong_sort_key(board: Board, raw: Raw) -> None:
    _, sort_key = placement(board, "m10", Decimal(999))
    raw.update(f"M#{board.board_id}#m10", "SCORE#all", "SET rsk = :k", {":k": {"S": sort_key}})


def wrong_shard(board: Board, raw: Raw) -> None:
    shard = keys.shard_of("m10", 3)
    partition = keys.rank_partition_key(board.board_id, "all", (shard + 1) % 3)
    raw.update(f"M#{board.board_id}#m10", "SCORE#all", "SET rpk = :p", {":p": {"S": partition}})


def stray_entry(board: Board, raw: Raw) -> None:
    partition, sort_key = placement(board, "junk", Decimal(5))
    raw.client.put_item(  # an index entry is an item of the streamed table, whatever its key
        TableName=raw.tables.table,
        Item={
            "pk": {"S": f"junk#{board.board_id}"},
            "sk": {"S": "x"},
            "rpk": {"S": partition},
            "rsk": {"S": sort_key},
        },
    )


def hidden_member_ranked(board: Board, raw: Raw) -> None:
    partition, sort_key = placement(board, "m06", Decimal(1))
    values = {":p": {"S": partition}, ":k": {"S": sort_key}}
    raw.update(f"M#{board.board_id}#m06", "SCORE#all", "SET rpk = :p, rsk = :k", values)


def ghost_score(board: Board, raw: Raw) -> None:
    partition, sort_key = placement(board, "ghost", Decimal(7))
    raw.put(
        {
            "pk": {"S": f"M#{board.board_id}#ghost"},
            "sk": {"S": "SCORE#all"},
            "s": {"N": "7"},
            "v": {"N": "1"},
            "t": {"N": "1"},
            "rpk": {"S": partition},
            "rsk": {"S": sort_key},
        }
    )


def delete_stopped_half_way(board: Board, raw: Raw) -> None:
    raw.update(f"M#{board.board_id}#m11", "MEMBER", "SET gone = :g", {":g": {"N": "1795000000000000"}})
    del board.scores["m11"]  # a delete, once finished, forgets it


def member_count_off(board: Board, raw: Raw) -> None:
    raw.update(f"B#{board.board_id}", "BOARD", "ADD memberCount :one", {":one": {"N": "1"}})


def tree_entry_lost(board: Board, raw: Raw) -> None:
    pks = schema.tree_pks(board.board_id, "all")
    leaves = [item for pk in pks for item in raw.query(pk)]
    leaf = next(item for item in leaves if "m10" in item.get("e", {}).get("M", {}))
    raw.update(leaf["pk"]["S"], leaf["sk"]["S"], "REMOVE e.m10")


def tree_count_off(board: Board, raw: Raw) -> None:
    root = raw.get(f"T#{board.board_id}#all", "R")
    name = sorted(root["c"]["M"])[-1]
    count = counttree.child_of(root["c"]["M"][name]["S"])
    one_more = counttree.child_text(replace(count, n=count.n + 1))
    raw.update(root["pk"]["S"], "R", "SET c.#c = :c", {":c": {"S": one_more}}, {"#c": name})


def stale_head(board: Board, raw: Raw) -> None:
    copy_pks = [f"H#{board.board_id}#{copy}" for copy in range(schema.HEAD_COPIES)]
    before = [raw.get(pk, "HEAD#all") for pk in [f"B#{board.board_id}", *copy_pks]]
    board.service.members.submit_score(board.board_id, "m12", Decimal(500))
    board.scores["m12"] += 500
    board.stream.settle()
    for item in before:
        raw.put(item)  # the head and its copies as they were before m12 took the lead


def stale_head_copy(board: Board, raw: Raw) -> None:
    before = raw.get(f"H#{board.board_id}#1", "HEAD#all")
    board.service.members.submit_score(board.board_id, "m12", Decimal(500))
    board.scores["m12"] += 500
    board.stream.settle()
    raw.put(before)  # copy 1 as it was before m12 took the lead; the primary has it


# What each corruption does, and what a check names then (kind, member), the first
# difference's detail. A write around the service keeps the item's version: the stream
# brings its record, and the count tree, which takes a record once per version, does not
# follow it, so a corrupted index key is a difference of the tree too.
CORRUPTIONS: dict[str, tuple[Callable[[Board, Raw], None], list[tuple[Kind, str | None]], str]] = {
    "an index entry dropped": (
        drop_index_entry,
        [(Kind.INDEX_MISSING, "m10"), (Kind.TREE, "m10")],
        "m10 (score 1) is not in the ranking",
    ),
    "a wrong sort key": (
        wrong_sort_key,
        [(Kind.INDEX_WRONG_SORT_KEY, "m10"), (Kind.TREE, "m10")],
        "its score 1 gives",
    ),
    "the wrong shard": (
        wrong_shard,
        [(Kind.INDEX_WRONG_PARTITION, "m10")],
        "member m10 is in index partition",
    ),
    "a stray entry": (stray_entry, [(Kind.INDEX_STRAY, None)], "which is no ranked member of period all"),
    "a hidden member ranked": (hidden_member_ranked, [(Kind.HIDDEN_RANKED, "m06")], "m06 is hidden, but"),
    "a score with no member": (ghost_score, [(Kind.ORPHAN_SCORE, "ghost")], "a score item of ghost"),
    "a delete stopped half-way": (
        delete_stopped_half_way,
        [(Kind.UNFINISHED_DELETE, "m11")],
        "has not finished",
    ),
    "memberCount one too many": (
        member_count_off,
        [(Kind.MEMBER_COUNT, None)],
        "memberCount is 15; the board has 14",
    ),
    "a member lost from the count tree": (
        tree_entry_lost,
        [(Kind.TREE, None), (Kind.TREE, "m10")],
        "members under the count tree's node of level 0",
    ),
    "a count of the tree one too many": (tree_count_off, [(Kind.TREE, None)], "the count tree's root counts"),
    "a stale head": (stale_head, [(Kind.HEAD, None)], "position 1 holds m"),
    "a stale copy of the head": (stale_head_copy, [(Kind.HEAD, None)], "the head's copy 1 holds version"),
}


@pytest.mark.parametrize("name", CORRUPTIONS)
def test_a_corrupted_structure_is_named_and_repaired(
    name: str, board: Board, dynamodb_client: Any, local_tables: Settings
) -> None:
    corrupt, named, detail = CORRUPTIONS[name]
    # Given a consistent board (a fixture; the first test checks it)
    # When one structure is corrupted, and the stream carries whatever it carries of that
    corrupt(board, Raw(dynamodb_client, local_tables))
    board.stream.settle()

    # Then a check names exactly those differences
    found = board.check()
    assert kinds(found) == named, found.differences
    assert detail in found.differences[0].detail

    # When it is repaired (and the stream carries the repair)
    repaired = board.check(repair=True)

    # Then the difference is gone, and a second check finds the board consistent
    assert repaired.ok, repaired.differences
    assert by_kind(repaired.repaired) == named
    assert repaired.notes == []
    again = board.check()
    assert again.ok, again.differences
    # and every read agrees with the model: the head's first page, ranks, the total
    service, board_id = board.service, board.board_id
    listing = sorted(board.scores.items(), key=lambda item: (-item[1], item[0]))
    top = service.reads.top(board_id, 100, None, False)
    assert [(e.member_id, e.score) for e in top.entries] == listing
    assert top.total == len(board.scores)
    for member_id, score in listing[::4]:
        expected_rank = 1 + sum(1 for other in board.scores.values() if other > score)
        assert service.reads.rank(board_id, member_id)["rank"] == expected_rank
