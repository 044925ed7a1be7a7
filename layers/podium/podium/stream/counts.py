"""Member counts: a board's ``memberCount``, and each period's count of a time-windowed
board, moved by one per member joining or leaving, once per stream record."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from podium import periods
from podium.models import BoardSettings
from podium.periods import ALL_TIME
from podium.ports import BoardStore
from podium.stream.records import Record, count_change

SettingsOf = Callable[[str], BoardSettings]

log = logging.getLogger(__name__)


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


def apply_counts(boards: BoardStore, settings_of: SettingsOf, records: Sequence[Record]) -> set[str]:
    """``apply_count`` for a batch: the records' changes of each count applied together
    (``BoardStore.apply_member_counts``), each still once; the eventIDs of the records
    whose count could not be applied (they are retried)."""
    groups: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for record in records:
        change = count_change(record)
        if change is not None:
            groups.setdefault((change.board_id, change.period), []).append(
                (str(record["eventID"]), change.delta)
            )
    failed: set[str] = set()
    for (board_id, period), changes in groups.items():
        try:
            if period == ALL_TIME:
                boards.apply_member_counts(board_id, changes)
            else:
                board = settings_of(board_id)
                expires = periods.expires_at(board.reset, period, board.retain_periods)
                boards.apply_member_counts(board_id, changes, period, expires)
        except Exception:
            log.exception("the member counts of %s (%s) were not applied", board_id, period)
            failed.update(event_id for event_id, _ in changes)
    return failed
