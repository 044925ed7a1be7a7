"""Rank by COUNT and top-N follow LastEvaluatedKey past DynamoDB's 1 MB page limit."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from podium import keys
from podium.dal import Database
from podium.dal.codecs import score_attributes
from podium.dal.schema import profile_key, score_key
from podium.keys import rank_partition_key
from podium.models import ScoreState
from podium.periods import ALL_TIME
from podium.validation import board_request
from podium.wiring import Services
from tests.helpers import unique_id

pytestmark = pytest.mark.integration

MEMBERS = 3000  # x ~450-byte index entries: well over 1 MB in one shard


def _where(board: str, settings: Any, member: str, state: ScoreState) -> tuple[str, str, int | None]:
    placement = keys.placement(board, settings, member, state, ALL_TIME)
    return placement.partition, placement.sort_key, placement.expires


def _bulk_load(store: Database, board: str, service: Services) -> list[str]:
    settings = service.boards.settings(board)
    members = [f"{i:05d}-" + "x" * 194 for i in range(MEMBERS)]  # 200-character ids
    items: list[dict[str, Any]] = []
    for i, member in enumerate(members):
        state = ScoreState(Decimal(i % 700), 1, 1)
        items.append(
            {
                **score_key(board, member, ALL_TIME),
                **score_attributes(state, *_where(board, settings, member, state)),
            }
        )
        items.append({**profile_key(board, member), "createdAt": {"S": "2026-11-22T10:00:00+00:00"}})
    for start in range(0, len(items), 25):
        request: Any = {
            store.tables.table: [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        }
        while request:
            request = store.tables.client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
    return members


def test_count_and_top_cross_the_1mb_page(service: Services, store: Database) -> None:
    # Given a one-shard board whose index partition holds more than 1 MB
    board = unique_id("big")
    service.boards.put_board(board, board_request({"shards": Decimal(1)}))
    members = _bulk_load(store, board, service)
    partition = rank_partition_key(board, ALL_TIME, 0)
    first_page = store.tables.client.query(
        TableName=store.tables.table,
        IndexName="RankIndex",
        KeyConditionExpression="rpk = :p",
        ExpressionAttributeValues={":p": {"S": partition}},
        Select="COUNT",
    )
    assert "LastEvaluatedKey" in first_page, "the test board must span more than one 1 MB page"
    assert first_page["Count"] < MEMBERS

    # When the lowest members are ranked (score 0: everyone else is better)
    answer = service.reads.rank(board, members[0])

    # Then the rank counts every page: 1 + the members with a score above 0
    scores = [i % 700 for i in range(MEMBERS)]
    assert answer["rank"] == 1 + sum(1 for s in scores if s > 0)

    # And a friends query across the whole board is exact too
    friends = service.reads.ranks(board, [members[0], members[699], members[350]])
    expected = {
        m: 1 + sum(1 for s in scores if s > scores[int(m[:5])])
        for m in (members[0], members[699], members[350])
    }
    assert {e.member_id: e.rank for e in friends} == expected

    # And a 1000-entry top page is complete and in order
    page = service.reads.top(board, 1000, None, with_data=False)
    assert len(page.entries) == 1000
    assert [e.score for e in page.entries] == sorted((Decimal(s) for s in scores), reverse=True)[:1000]
