"""The references' own examples, on DynamoDB Local."""

from __future__ import annotations

from decimal import Decimal

import pytest

from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import unique_id

pytestmark = pytest.mark.integration

IMAGES = {
    "images/001.jpg": 27,
    "images/002.jpg": 23,
    "images/003.jpg": 16,
    "images/004.jpg": 83,
    "images/005.jpg": 52,
    "images/006.jpg": 94,
}


def test_write_sharding_lab_top_three(service: Services) -> None:
    # Given the lab's six images on a board split across 3 shards
    board = unique_id("images")
    service.boards.put_board(board, board_request({"shards": Decimal(3)}))
    for path, views in IMAGES.items():
        member = path.replace("images/", "img-")
        service.members.put_member(board, member, member_request({"score": Decimal(views)}))

    # When the top 3 is read by scatter-gather
    page = service.reads.top(board, 3, None, with_data=False)

    # Then it is image 006, then 004, then 005
    assert [(e.rank, e.member_id, e.score) for e in page.entries] == [
        (1, "img-006.jpg", Decimal(94)),
        (2, "img-004.jpg", Decimal(83)),
        (3, "img-005.jpg", Decimal(52)),
    ]
    assert page.next_cursor is not None


def test_rank_by_count_example(service: Services) -> None:
    # Given the running event of the rank article: USER#1 ran 82.3 km, one runner ran more
    board = unique_id("event-1")
    service.boards.put_board(board, board_request({"shards": Decimal(4)}))
    service.members.put_member(board, "user-2", member_request({"score": Decimal("101.5")}))
    service.members.put_member(board, "user-1", member_request({"score": Decimal("71.1")}))
    service.members.put_member(board, "user-4", member_request({"score": Decimal("12")}))

    # When user 1 tracks another 11.2 km
    change = service.members.submit_score(board, "user-1", Decimal("11.2"))

    # Then they have 82.3 km and rank 2nd
    assert (change.score, change.previous_score) == (Decimal("82.3"), Decimal("71.1"))
    assert service.reads.rank(board, "user-1")["rank"] == 2

    # And a runner with an equal distance shares that rank ("1224")
    service.members.put_member(board, "user-3", member_request({"score": Decimal("82.30")}))
    assert service.reads.rank(board, "user-3")["rank"] == 2
    assert service.reads.rank(board, "user-1")["rank"] == 2
    assert service.reads.rank(board, "user-4")["rank"] == 4
    listing = service.reads.top(board, 10, None, with_data=False).entries
    assert [(e.rank, e.member_id) for e in listing] == [
        (1, "user-2"),
        (2, "user-1"),
        (2, "user-3"),
        (4, "user-4"),
    ]
