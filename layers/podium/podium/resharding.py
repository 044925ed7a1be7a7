"""Re-sharding: moving a board to another shard count while it is read and written (the
reference architecture's partition-key migration). ``start`` answers the API; ``run`` is the
worker's, on a schedule: it carries every move on a step further within a time budget, from
the checkpoint the board item keeps, under a lease, and ends each move it completes.

The backfill walks, for every period the board keeps, the old layout's partitions in key
order, and moves each entry whose member's shard under the new count is another, with a
conditional update (``rpk`` and ``rsk`` as read), so it is idempotent, and a write that
raced it wins. Writes placed by an old layout after the walk passed are moved by the
aggregator (``podium.stream.placements``). podium.layouts has the timing."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from podium import fanout, keys, layouts, periods
from podium.boards import BoardService
from podium.errors import Conflict, NotFound
from podium.keys import just_above, member_of_key, rank_partition_key
from podium.models import Board, BoardSettings, Checkpoint, Reshard
from podium.periods import ALL_TIME
from podium.ports import IndexReader, ReshardStore

PAGE = 200  # index keys read at once; their moves are recorded together
LEASE_MARGIN = timedelta(seconds=30)  # a run's lease outlives its budget by this much


def periods_to_move(settings: BoardSettings, started_at: datetime) -> list[str]:
    """Every period whose items may sit on the old layout: the current one when the move
    started and the past ones kept then (a period begun since is written at the new count)."""
    if settings.reset == "never":
        return [ALL_TIME]
    current = periods.period_of(settings.reset, started_at)
    return [periods.shift(settings.reset, current, -back) for back in range(settings.retain_periods + 1)]


def walk(settings: BoardSettings, reshard: Reshard, checkpoint: Checkpoint | None) -> Iterator[Checkpoint]:
    """The backfill's stops from ``checkpoint`` on: each (period, old shard) to walk, the
    first one from where the checkpoint left it."""
    order = [
        (p, s) for p in periods_to_move(settings, reshard.started_at) for s in layouts.source_shards(reshard)
    ]
    start = 0
    if checkpoint is not None:
        start = (
            order.index((checkpoint.period, checkpoint.shard))
            if (checkpoint.period, checkpoint.shard) in order
            else 0
        )
    for number, (period, shard) in enumerate(order[start:]):
        yield checkpoint if number == 0 and checkpoint is not None else Checkpoint(period, shard)


@dataclass(frozen=True)
class RunReport:
    """What one worker run did."""

    boards: int = 0  # boards it worked on
    moved: int = 0  # score items it moved
    ended: int = 0  # moves it ended


class ReshardService:
    def __init__(
        self,
        boards: BoardService,
        store: ReshardStore,
        index: IndexReader,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.boards = boards
        self.store = store
        self.index = index
        self.monotonic = monotonic

    @property
    def timing(self) -> layouts.Timing:
        return self.boards.timing

    def start(self, board_id: str, shards: int) -> Board:
        """Begin moving the board to ``shards`` shards: the board as it shows the move."""
        board = self.boards.boards.get_board(board_id, consistent=True)
        if board is None:
            raise NotFound(f"board {board_id} does not exist")
        now = self.boards.clock()
        reshard = board.reshard
        if reshard is not None and reshard.ended_at is None:
            raise Conflict(f"board {board_id} is being re-sharded to {reshard.to_shards} shards already")
        if shards == board.settings.shards:
            raise Conflict(f"board {board_id} has {shards} shards already")
        if not layouts.is_settled(reshard, now, self.timing):
            raise Conflict(f"board {board_id} was re-sharded moments ago: try again in a few seconds")
        settled = now - self.timing.linger
        if not self.store.start_reshard(board_id, board.settings.shards, shards, now, settled):
            raise Conflict(f"board {board_id} changed meanwhile (another re-shard?): read it and try again")
        started = replace(board, reshard=Reshard(board.settings.shards, shards, now))
        return self.boards.as_shown(started)

    def run_reshards(self, budget: timedelta, owner: str | None = None) -> RunReport:
        """Carry every move on within ``budget``: one board after another, each from its
        checkpoint, as far as the time allows."""
        owner = owner or uuid.uuid4().hex
        deadline = self.monotonic() + budget.total_seconds()
        report = RunReport()
        for board_id in self.store.moving_boards():
            if self.monotonic() >= deadline:
                break
            moved, ended = self.continue_move(board_id, owner, deadline, budget)
            report = RunReport(report.boards + 1, report.moved + moved, report.ended + int(ended))
        return report

    def continue_move(
        self, board_id: str, owner: str, deadline: float, budget: timedelta
    ) -> tuple[int, bool]:
        """One board's move, from its checkpoint until it ends or the time is up: the items
        moved, and whether it ended."""
        found = self.store.reshard_progress(board_id)
        if found is None or found[0].reshard is None or found[0].reshard.ended_at is not None:
            self.store.forget_reshard(board_id)  # gone, or ended with its marker left behind
            return 0, False
        board, checkpoint = found
        reshard = found[0].reshard
        now = self.boards.clock()
        if not layouts.may_begin(reshard, now, self.timing):
            return 0, False  # some writer may still place at the old count: next run
        until = now + budget + LEASE_MARGIN
        if not self.store.claim_reshard(board_id, owner, _ms(now), _ms(until)):
            return 0, False  # another worker has it
        moved = 0
        for stop in walk(board.settings, reshard, checkpoint):
            done, moved = self._walk_partition(board_id, reshard, stop, owner, deadline, moved)
            if not done:
                return moved, False
        ended = self.store.end_reshard(board_id, owner, reshard.to_shards, self.boards.clock())
        return moved, ended

    def _walk_partition(
        self, board_id: str, reshard: Reshard, stop: Checkpoint, owner: str, deadline: float, moved: int
    ) -> tuple[bool, int]:
        """Move the entries of one old partition that belong elsewhere, a page at a time,
        recording the checkpoint after each page: (whether the partition is done, moved)."""
        partition = rank_partition_key(board_id, stop.period, stop.shard)
        after = stop.after
        while True:
            if self.monotonic() >= deadline:
                return False, moved
            page = self.index.keys_in_range(partition, just_above(after) if after else None, None, limit=PAGE)
            count = self._move_page(board_id, reshard, stop, partition, page)
            moved += count
            after = page[-1] if page else after
            # A checkpoint at a partition's last key: a resumed run finds it done with one query.
            if not self.store.advance_reshard(
                board_id, owner, count, Checkpoint(stop.period, stop.shard, after)
            ):
                return False, moved  # the lease was lost: its new holder goes on
            if len(page) < PAGE:
                return True, moved

    def _move_page(
        self, board_id: str, reshard: Reshard, stop: Checkpoint, partition: str, page: list[str]
    ) -> int:
        """Move the page's entries that belong on another shard, in parallel (each is its
        own conditional update): how many moved."""

        def move(sort_key: str) -> bool:
            member_id = member_of_key(sort_key)
            target = layouts.destination(member_id, stop.shard, reshard.to_shards)
            if target is None:
                return False
            to_partition = keys.rank_partition_key(board_id, stop.period, target)
            return self.store.move_index_entry(
                board_id, member_id, stop.period, partition, to_partition, sort_key
            )

        return sum(fanout.gather(move, page))


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
