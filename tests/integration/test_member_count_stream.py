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
from tests.helpers import stream_records, unique_id

pytestmark = pytest.mark.integration


@pytest.fixture
def counter_handler(
    local_tables: Settings, dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    monkeypatch.setenv("TABLE_NAME", local_tables.table_name)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_endpoint)
    wiring.reset()
    consumer = next(
        c for c in template_module.read().stream_consumers() if c.function == "AggregatorFunction"
    )
    yield load_handler("podium_function_member_counter_it", consumer.code_dir, consumer.handler)
    wiring.reset()


def test_a_redelivered_batch_counts_once(
    service: Services,
    local_tables: Settings,
    dynamodb_client: Any,
    dynamodb_endpoint: str,
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
        r
        for r in stream_records(dynamodb_client, dynamodb_endpoint, local_tables.table_name)
        if r["dynamodb"]["Keys"]["pk"]["S"].startswith(f"M#{board}#")
    ]

    # When the stream's batch is delivered, and then delivered again
    first = counter_handler({"Records": records}, LambdaContext("AggregatorFunction"))
    second = counter_handler({"Records": records}, LambdaContext("AggregatorFunction"))

    # Then no record failed, and the count is that of the members left: 2, not 4
    assert first == {"batchItemFailures": []}
    assert second == {"batchItemFailures": []}
    assert service.boards.get_board(board).member_count == 2
