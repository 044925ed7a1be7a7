"""Rollups on DynamoDB Local: the reference architecture's xbox/pc -> all example."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from podium.config import Settings
from podium.errors import ValidationError
from podium.stream.aggregate import Aggregator
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import stream_records, unique_id

pytestmark = pytest.mark.integration


def _records(client: Any, endpoint: str, table: str, boards: list[str]) -> list[dict[str, Any]]:
    prefixes = tuple(f"M#{b}#" for b in boards)
    return [
        r
        for r in stream_records(client, endpoint, table)
        if r["dynamodb"]["Keys"]["pk"]["S"].startswith(prefixes)
    ]


def test_rollup_board_creation_is_checked(service: Services) -> None:
    target = unique_id("all")
    service.boards.put_board(target, board_request({}))
    with pytest.raises(ValidationError, match="does not exist"):
        service.boards.put_board(unique_id("src"), board_request({"rollupTo": ["no-such-board"]}))
    with pytest.raises(ValidationError, match="itself"):
        service.boards.put_board("self-loop", board_request({"rollupTo": ["self-loop"]}, own_id="self-loop"))
    with pytest.raises(ValidationError, match="at most 5"):
        service.boards.put_board("wide", board_request({"rollupTo": [target] * 6}, own_id="wide"))


def test_xbox_and_pc_roll_up_into_all_exactly_once(
    service: Services,
    local_tables: Settings,
    dynamodb_client: Any,
    dynamodb_endpoint: str,
) -> None:
    # Given all_level1 (increment) and best_level1 (best), and two sources rolling up into both
    suffix = unique_id("l1")
    total, best = f"all_level1-{suffix}", f"best_level1-{suffix}"
    service.boards.put_board(total, board_request({}))
    service.boards.put_board(best, board_request({"operator": "best"}))
    xbox, pc = f"xbox_level1-{suffix}", f"pc_level1-{suffix}"
    for source in (xbox, pc):
        service.boards.put_board(source, board_request({"rollupTo": [total, best]}, own_id=source))

    # When players score on both platforms
    service.members.put_member(xbox, "brian", member_request({"score": Decimal(100), "data": {"tag": "B"}}))
    service.members.submit_score(xbox, "brian", Decimal("23.5"))
    service.members.put_member(pc, "brian", member_request({}))
    service.members.submit_score(pc, "brian", Decimal(40))
    service.members.put_member(pc, "damian", member_request({"score": Decimal(7)}))
    service.members.delete_member(pc, "damian")  # deleting a source member changes no target
    aggregator = Aggregator(service.db, service.boards.settings, service.clock)
    batch = _records(dynamodb_client, dynamodb_endpoint, local_tables.table_name, [xbox, pc])
    for record in batch + batch:  # and the stream delivers everything twice
        aggregator.apply(record)

    # Then the increment target holds the sum, the best target the best, once each
    assert service.members.get_member(total, "brian").score == Decimal("163.5")
    assert service.members.get_member(best, "brian").score == Decimal("123.5")
    assert service.members.get_member(total, "brian").data == {"tag": "B"}  # created with the source's data
    assert service.members.get_member(total, "damian").score == 7
    # And the targets' rankings agree
    assert [(e.member_id, e.score) for e in service.reads.top(total, 10, None, False).entries] == [
        ("brian", Decimal("163.5")),
        ("damian", Decimal(7)),
    ]
