"""memberCount from the real change stream of DynamoDB Local, applied exactly once."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from devstack import template as template_module
from devstack.functions import LambdaContext, load_handler
from podium import wiring
from podium.config import Settings
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import TableStream, unique_id

pytestmark = pytest.mark.integration


@pytest.fixture
def counter_handler(
    local_tables: Settings, dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    monkeypatch.setenv("TABLE_NAME", local_tables.table_name)
    monkeypatch.setenv("STATE_TABLE_NAME", local_tables.state_table)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_endpoint)
    wiring.reset()
    consumer = next(
        c for c in template_module.read().stream_consumers() if c.function == "AggregatorFunction"
    )
    yield load_handler("podium_function_member_counter_it", consumer.code_dir, consumer.handler)
    wiring.reset()


def test_a_redelivered_batch_counts_once(
    service: Services,
    table_stream: TableStream,
    counter_handler: Any,
) -> None:
    # Given three members added and one deleted on a new board
    board = unique_id("counted")
    service.boards.put_board(board, board_request({}))
    for member in ("a", "b", "c"):
        service.members.put_member(board, member, member_request({"score": Decimal(1)}))
    service.members.submit_score(board, "a", Decimal(5))
    service.members.delete_member(board, "b")
    records = [
        r for r in table_stream.records() if r["dynamodb"]["Keys"]["pk"]["S"].startswith(f"M#{board}#")
    ]

    # When the stream's batch is delivered, and then delivered again
    first = counter_handler({"Records": records}, LambdaContext("AggregatorFunction"))
    second = counter_handler({"Records": records}, LambdaContext("AggregatorFunction"))

    # Then no record failed, and the count is that of the members left: 2, not 4
    assert first == {"batchItemFailures": []}
    assert second == {"batchItemFailures": []}
    assert service.boards.get_board(board).member_count == 2


def test_a_batch_of_more_records_than_a_transaction_holds_counts_each_once_across_redeliveries(
    service: Services,
    table_stream: TableStream,
    counter_handler: Any,
) -> None:
    # Given 130 members added to a new board and 7 of them deleted (the handler counts
    # 99 records a transaction: these are two of them and more)
    board = unique_id("many")
    service.boards.put_board(board, board_request({}))
    members = [f"m{n:03d}" for n in range(130)]
    for member in members:
        service.members.put_member(board, member, member_request({"score": Decimal(len(member))}))
    gone = members[10:17]
    for member in gone:
        service.members.delete_member(board, member)
    records = [
        r for r in table_stream.records() if r["dynamodb"]["Keys"]["pk"]["S"].startswith(f"M#{board}#")
    ]

    # When the stream is delivered in two batches, then the second half again with what
    # follows (a retry from a failed record on), then all of it once more
    context = LambdaContext("AggregatorFunction")
    half = len(records) // 2
    parts = [records[:half], records[half // 2 : half + 40], records[half:], records]
    delivered: set[str] = set()
    for part in parts:
        answer = counter_handler({"Records": part}, context)

        # Then after each, no record failed, and the board counts each profile's INSERT
        # and REMOVE delivered so far once
        delivered.update(r["eventID"] for r in part)
        expected = sum(
            {"INSERT": 1, "REMOVE": -1}.get(r["eventName"], 0)
            for r in records
            if r["eventID"] in delivered and r["dynamodb"]["Keys"]["sk"]["S"] == "MEMBER"
        )
        assert answer == {"batchItemFailures": []}
        assert service.boards.get_board(board).member_count == expected
    assert expected == len(members) - len(gone)
