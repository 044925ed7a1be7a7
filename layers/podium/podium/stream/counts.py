"""Member counts: a board's ``memberCount``, and each period's count of a time-windowed
board, moved by one per member joining or leaving, once per stream record."""

from __future__ import annotations

from collections.abc import Callable

from podium import periods
from podium.models import BoardSettings
from podium.periods import ALL_TIME
from podium.ports import BoardStore
from podium.stream.records import Record, count_change

SettingsOf = Callable[[str], BoardSettings]


def apply_count(boards: BoardStore, settings_of: SettingsOf, record: Record) -> None:
    change = count_change(record)
    if change is None:
        return
    if change.period == ALL_TIME:
        boards.apply_member_count(str(record["eventID"]), change.board_id, change.delta)
        return
    board = settings_of(change.board_id)
    expires = periods.expires_at(board.reset, change.period, board.retain_periods)
    boards.apply_member_count(str(record["eventID"]), change.board_id, change.delta, change.period, expires)
