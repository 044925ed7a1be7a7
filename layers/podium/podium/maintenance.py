"""Maintenance of the rank structures outside the stream: finishing the score-bucket
splits of a board gone quiet (the scheduled job), and rebuilding a board's head and
buckets from its index (a board whose scores were loaded in bulk)."""

from __future__ import annotations

from collections.abc import Sequence

from podium.boards import BoardService
from podium.ports import IndexReader, StructureStore
from podium.stream.upkeep import RankUpkeep


class Maintenance:
    def __init__(self, boards: BoardService, structures: StructureStore, index: IndexReader) -> None:
        self.boards = boards
        self.upkeep = RankUpkeep(structures, index, boards.settings, boards.clock)

    def finish_splits(self, board_id: str) -> int:
        """Finish the splits of the board's score buckets (current period) that have
        settled and that no stream record has come to finish; how many were finished."""
        period = self.boards.period(self.boards.settings(board_id))
        return self.upkeep.finish_splits(board_id, period)

    def rebuild_rank_structures(
        self, board_id: str, requested_period: str | None = None, ranked: Sequence[str] | None = None
    ) -> int:
        """Rebuild the board's head and score buckets from the index (or from the sort keys
        ``ranked``); the number of buckets."""
        period = self.boards.period(self.boards.settings(board_id), requested_period)
        return self.upkeep.rebuild(board_id, period, ranked)
