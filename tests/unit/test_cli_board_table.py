"""`podium boards show`'s table (podium_cli.output.board_table): a move in progress is shown
with its new count, its start and how many members it has copied; a board not moving
shows no such row."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from podium_cli.output import board_table
from podium_client import Board

BOARD = {
    "boardId": "images",
    "order": "desc",
    "operator": "set",
    "tieBreak": "shared",
    "shards": 3,
    "reset": "never",
    "memberCount": 20000,
    "publicRead": False,
    "clientWrites": False,
    "createdAt": "2026-11-25T11:00:00Z",
}


def shown(body: dict[str, object]) -> str:
    out = StringIO()
    Console(file=out, width=200).print(board_table(Board.from_json(body)))
    return out.getvalue()


def test_a_board_being_resharded_shows_the_move_and_its_progress() -> None:
    # Given a board the API shows moving from 3 to 17 shards
    moving = {**BOARD, "reshard": {"toShards": 17, "startedAt": "2026-11-25T12:00:00Z", "copied": 4321}}

    # When its table is printed, Then a row tells the move and its progress
    table = shown(moving)
    assert "reshard" in table
    assert "to 17 shards since 2026-11-25T12:00:00Z: 4,321 members copied" in table


def test_a_board_not_moving_shows_no_move() -> None:
    assert "reshard" not in shown(BOARD)
