"""Maintenance of the rank structures outside the stream: rebuilding a board's head and
count tree from its index (a board whose scores were loaded in bulk, the checker's
repairs), and building the count trees of a board made before them, which ranks are
counted from once every period a read can ask for is built (``Board.count_tree``)."""

from __future__ import annotations

from collections.abc import Mapping

from podium import periods
from podium.boards import BoardService
from podium.counttree import Entry
from podium.ports import BoardStore, IndexReader, MemberStore, StructureStore, TreeStore
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

    @property
    def board_store(self) -> BoardStore:
        return self.boards.boards

    def rebuild_rank_structures(
        self, board_id: str, requested_period: str | None = None, ranked: Mapping[str, Entry] | None = None
    ) -> int:
        """Rebuild the board's head and count tree of one period (the current one unless
        asked) from the index, or from ``ranked`` (member -> its key and version); the
        number of the tree's nodes. On a board that never resets that period is all a read
        can ask for: the board is then counted from its tree."""
        settings = self.boards.settings(board_id)
        period = self.boards.period(settings, requested_period)
        nodes = self.upkeep.rebuild(board_id, period, ranked)
        if settings.reset == "never":
            self.board_store.mark_count_tree(board_id)
        return nodes

    def build_count_trees(self, board_id: str) -> dict[str, int]:
        """Build the board's count tree of every period a read can ask for (the current one
        and the ``retainPeriods`` before it) from the index, then mark the board as counted
        from its trees; the number of nodes of each period's tree. The stream keeps every
        board's trees from the moment it runs this code, so what is built stays whole.
        NotFound when there is no such board."""
        settings = self.boards.settings(board_id)
        current = self.boards.period(settings)
        readable = [current]
        if settings.reset != "never":
            readable += [
                periods.shift(settings.reset, current, -n) for n in range(1, settings.retain_periods + 1)
            ]
        built = {period: self.upkeep.rebuild(board_id, period) for period in readable}
        self.board_store.mark_count_tree(board_id)
        return built

    def unbuilt_boards(self, page: int = 100) -> list[str]:
        """The boards whose count trees were never built (made before them)."""
        unbuilt: list[str] = []
        after: str | None = None
        while True:
            boards, after = self.board_store.list_boards(page, after)
            unbuilt += [board.board_id for board in boards if not board.count_tree]
            if after is None:
                return unbuilt
