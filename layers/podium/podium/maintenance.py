"""Maintenance of the rank structures outside the stream: rebuilding a board's head and
count tree from its index (a board whose scores were loaded in bulk, the checker's
repairs)."""

from __future__ import annotations

from collections.abc import Mapping

from podium.boards import BoardService
from podium.counttree import Entry
from podium.ports import IndexReader, MemberStore, StructureStore, TreeStore
from podium.stream.upkeep import RankUpkeep


class Maintenance:
    def __init__(
        self,
        boards: BoardService,
        structures: StructureStore,
        index: IndexReader,
        tree: TreeStore,
        members: MemberStore,
    ) -> None:
        self.boards = boards
        self.upkeep = RankUpkeep(structures, index, tree, members, boards.settings, boards.clock)

    def rebuild_rank_structures(
        self, board_id: str, requested_period: str | None = None, ranked: Mapping[str, Entry] | None = None
    ) -> int:
        """Rebuild the board's head and count tree of one period (the current one unless
        asked) from the index, or from ``ranked`` (member -> its key and version); the
        number of the tree's nodes."""
        settings = self.boards.settings(board_id)
        period = self.boards.period(settings, requested_period)
        return self.upkeep.rebuild(board_id, period, ranked)
