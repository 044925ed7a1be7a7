"""The event log on DynamoDB Local: inserts, the fold (exactly once), fresh reads."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from podium.errors import ValidationError
from podium.validation import board_request, events_request, member_request
from podium.wiring import Services
from tests.helpers import TableStream, unique_id

pytestmark = pytest.mark.integration


def _value(v: Any) -> Any:
    return v if v == "x" else Decimal(str(v))


def _events(*events: tuple[str, Any, str | None]) -> Any:
    body = {
        "events": [{"memberId": m, "value": _value(v), **({"eventId": e} if e else {})} for m, v, e in events]
    }
    return events_request(body)


def test_logged_events_fold_once_and_read_fresh_before(service: Services, table_stream: TableStream) -> None:
    # Given an image with 10 views, and views logged: one id sent twice, one reused for
    # another image, one for an image that does not exist
    board = unique_id("views")
    service.boards.put_board(board, board_request({"shards": Decimal(2)}))
    service.members.put_member(board, "img-1", member_request({"score": Decimal(10)}))
    service.members.put_member(board, "img-2", member_request({}))
    accepted = service.members.log_events(
        board,
        _events(("img-1", 1, "v-1"), ("img-1", 1, "v-2"), ("img-1", "0.5", None), ("img-1", 1, "v-1")),
    )
    service.members.log_events(board, _events(("img-1", 1, "v-2"), ("img-2", 7, "v-1"), ("ghost", 3, "v-9")))
    assert accepted == 4

    # When nothing is folded yet, a fresh read is the true total already
    member, pending = service.members.fresh_member(board, "img-1")
    assert (member.score, pending) == (Decimal("12.5"), 3)
    assert service.members.get_member(board, "img-1").score == 10

    # When the stream delivers the log to the fold, twice
    records = [
        r for r in table_stream.records() if r["dynamodb"]["Keys"]["pk"]["S"].startswith(f"P#{board}#")
    ]
    folder = service.folder
    assert folder.fold(records) == set()
    assert folder.fold(records) == set()

    # Then each distinct event counted once; the reused id and the ghost's event did not
    assert service.members.get_member(board, "img-1").score == Decimal("12.5")
    assert service.members.get_member(board, "img-2").score == 0  # "v-1" was img-1's first
    assert service.members.fresh_member(board, "img-1")[1] == 0
    assert service.boards.get_board(board).dropped_events == 1
    assert service.reads.rank(board, "img-1")["rank"] == 1


def test_only_increment_boards_take_events(service: Services) -> None:
    board = unique_id("best")
    service.boards.put_board(board, board_request({"operator": "best"}))
    with pytest.raises(ValidationError, match="only increment boards take events"):
        service.members.log_events(board, _events(("a", 1, None)))
    with pytest.raises(ValidationError, match=r"events\[1\].value"):
        _events(("a", 1, None), ("b", "x", None))
