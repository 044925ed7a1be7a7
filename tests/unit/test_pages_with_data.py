"""A page with the members' data stays under 5 MiB (the API's limit for a body): it holds
fewer than ``limit`` entries when the data is big, its nextCursor goes on after its last
entry, and the pages together list every member once, in order (moto: the logic, not
DynamoDB's behaviour)."""

from __future__ import annotations

from decimal import Decimal

import boto3

from podium import numbers
from podium.config import Settings
from podium.dal import Database
from podium.reads import MAX_PAGE_BYTES
from podium.validation import board_request, member_request
from podium.wiring import Services

MEMBERS = 100
DATA_BYTES = 60 * 1024


def test_big_data_cuts_the_page_under_5_mib_and_the_next_page_goes_on(moto_tables: Settings) -> None:
    # Given 100 members with 60 KB of data each (6 MB in all), ranked 0..99 by score
    service = Services(
        Database.connect(moto_tables, client=boto3.client("dynamodb", region_name="us-east-1"))
    )
    board = "big-data"
    service.boards.put_board(board, board_request({"shards": Decimal(3)}))
    for index in range(MEMBERS):
        body = {"score": Decimal(MEMBERS - index), "data": {"blob": f"{index:03d}" + "x" * DATA_BYTES}}
        service.members.put_member(board, f"m{index:03d}", member_request(body))

    # When the listing is read 100 at a time with data
    listed: list[str] = []
    ranks: list[int] = []
    sizes: list[int] = []
    cursor = None
    while True:
        page = service.reads.top(board, 100, cursor, True, consistent=True)
        body = {
            "boardId": board,
            "entries": [e.to_json() for e in page.entries],
            "total": 0,
            "nextCursor": None,
        }
        sizes.append(len(numbers.dumps(body).encode("utf-8")))
        listed += [entry.member_id for entry in page.entries]
        ranks += [entry.rank for entry in page.entries]
        assert all(
            entry.data and entry.data["blob"].startswith(entry.member_id[1:]) for entry in page.entries
        )
        cursor = page.next_cursor
        if cursor is None:
            break

    # Then each page is under 5 MiB, the first holds fewer than 100, and together they list
    # every member once, best first
    assert max(sizes) < MAX_PAGE_BYTES
    assert len(sizes) == 2
    assert listed == [f"m{index:03d}" for index in range(MEMBERS)]
    assert ranks == list(range(1, MEMBERS + 1))
