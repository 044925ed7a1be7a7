"""``total`` is the board's memberCount, which the change stream keeps and which may lag
writes by a few seconds; an answer never gives a total below the positions it shows
itself ("4th of 0"). Here no stream runs at all (moto), so memberCount stays 0."""

from __future__ import annotations

from decimal import Decimal

import boto3

from podium.config import Settings
from podium.dal import Database
from podium.validation import board_request, member_request
from podium.wiring import Services


def test_a_lagging_member_count_is_never_below_what_the_answer_shows(moto_tables: Settings) -> None:
    # Given 6 members written, and a member count that has not caught up (no stream: 0)
    service = Services(
        Database.connect(moto_tables, client=boto3.client("dynamodb", region_name="us-east-1"))
    )
    board = "lagging"
    service.boards.put_board(board, board_request({"shards": Decimal(3)}))
    scores = {"a": 27, "b": 23, "c": 16, "d": 83, "e": 52, "f": 94}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": Decimal(score)}))
    assert service.boards.get_board(board).member_count == 0

    # When a rank, a page of the top and a window are read
    rank = service.reads.rank(board, "a")
    top = service.reads.top(board, 4, None, False, consistent=True)
    around = service.reads.around(board, "c", 1)

    # Then each total is at least the last position it shows (a plain sorted list says
    # where each member is), and the member ranked 4th of a total of 4 is 100 %
    listing = sorted(scores, key=lambda m: -scores[m])
    assert rank["rank"] == listing.index("a") + 1 == 4
    assert rank["total"] == 4
    assert rank["topPercent"] == Decimal(100)
    assert [e.member_id for e in top.entries] == listing[:4]
    assert top.total == 4
    assert [e.member_id for e in around.entries] == listing[-3:]  # shifted to stay full
    assert around.total == 6
