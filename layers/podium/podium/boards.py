"""Boards: creating or confirming one, reading one, the catalog, and what every other room
asks of a board (its settings and layout, cached a few seconds; which period a request
means)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from podium import clock as clock_module
from podium import cursors, layouts, periods
from podium.errors import Conflict, NotFound, ValidationError
from podium.layouts import Timing
from podium.models import Board, BoardList, BoardPolicy, BoardSettings, Reshard
from podium.periods import ALL_TIME
from podium.ports import BoardStore
from podium.recent import Recent
from podium.values import frozen

if TYPE_CHECKING:  # the stream consumers' cold start builds boards and parses no request
    from podium.validation import BoardRequest

Clock = Callable[[], datetime]
CATALOG_SCOPE = "boards"


def system_clock() -> datetime:
    return clock_module.now()


def to_microseconds(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


@frozen
class Layout:
    """A board's settings and its re-shard as one instance last read them."""

    settings: BoardSettings
    reshard: Reshard | None


class BoardService:
    def __init__(self, boards: BoardStore, clock: Clock = system_clock, timing: Timing | None = None) -> None:
        self.boards = boards
        self.clock = clock
        self.timing = timing or Timing()
        self._layouts: Recent[str, Layout] = Recent(self.timing.cache.total_seconds())

    def put_board(self, board_id: str, request: BoardRequest) -> tuple[Board, bool]:
        """Create the board (True) or confirm it exists with the same settings (False)."""
        existing = self.boards.get_board(board_id, consistent=True)
        if existing is None:
            for target in request.settings.rollup_to:
                # Targets must exist first; as settings never change, no cycle can form.
                if self.boards.get_board(target, consistent=True) is None:
                    raise ValidationError(f"rollupTo target {target} does not exist: create it first")
            policy = request.policy(BoardPolicy())
            board = Board(board_id, request.settings, request.title, self.clock(), policy=policy)
            if self.boards.create_board(board, ALL_TIME):
                return self.as_shown(board), True
            existing = self.boards.get_board(board_id, consistent=True)
            assert existing is not None
        differing = request.settings.differences(existing.settings)
        if differing:
            raise Conflict(
                f"board {board_id} exists with different settings: {', '.join(differing)} "
                "cannot change after creation"
            )
        title = request.title if request.title is not None else existing.title
        policy = request.policy(existing.policy)
        if title != existing.title or policy != existing.policy:
            self.boards.update_board(board_id, request.title, policy)
            existing = replace(existing, title=title, policy=policy)
        return self.as_shown(existing), False

    def get_board(self, board_id: str) -> Board:
        board = self.boards.get_board(board_id)
        if board is None:
            raise NotFound(f"board {board_id} does not exist")
        return self.as_shown(board)

    def list_boards(self, limit: int, cursor: str | None) -> BoardList:
        from podium.validation import BOARD_ID  # off the import path: see TYPE_CHECKING above

        after = cursors.decode(cursor, CATALOG_SCOPE, BOARD_ID) if cursor is not None else None
        boards, last = self.boards.list_boards(limit, after)
        return BoardList(
            boards=[self.as_shown(board) for board in boards],
            next_cursor=cursors.encode(CATALOG_SCOPE, last) if last is not None else None,
        )

    def policy(self, board_id: str) -> BoardPolicy | None:
        """A board's policy as it is now (it may change at any time: never cached); None
        when the board does not exist."""
        board = self.boards.get_board(board_id)
        if board is None:
            return None
        self._keep(board)
        return board.policy

    def settings(self, board_id: str) -> BoardSettings:
        """A board's settings as a request made now places and reads by (``layouts``):
        fixed but for the shard count, which a re-shard changes, so they are kept at most
        ``timing.cache`` (the move waits that long before any item moves)."""
        cached = self._layouts.get(board_id)
        if cached is None:
            board = self.boards.get_board(board_id, consistent=True)
            if board is None:
                raise NotFound(f"board {board_id} does not exist")
            cached = self._keep(board)
        return layouts.effective(cached.settings, cached.reshard, self.clock(), self.timing)

    def _keep(self, board: Board) -> Layout:
        return self._layouts.keep(board.board_id, Layout(board.settings, board.reshard))

    def period(self, settings: BoardSettings, requested: str | None = None) -> str:
        """The period a request means: the current one by the clock, unless it asks for
        ``previous`` or a period id (time-windowed boards)."""
        return periods.resolve(settings.reset, requested, self.clock(), settings.retain_periods)

    def as_shown(self, board: Board) -> Board:
        """The board as the API shows it now: a time-windowed board with its current period."""
        if board.settings.reset == "never":
            return board
        return replace(board, period=periods.period_of(board.settings.reset, self.clock()))
