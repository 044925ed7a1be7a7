"""Re-sharding: moving a board to another shard count while it is read and written (the
reference architecture's partition-key migration: add a key, backfill it, switch reads,
drop the old key). ``start`` answers the API; ``run_reshards`` is the worker's, on a
schedule and at once after a start: it carries every move on a step further within a time
budget, from the checkpoint the board item keeps, under a lease. podium.layouts has the
phases and their timing.

The copy walks, for every period the board may hold, the old index's partitions in key
order, and gives each entry's item its key in the new index (a conditional update: never
on an item deleted or hidden meanwhile). Then a check reads both indexes and keys any item
the new one still lacks (a writer that had not seen the move), and the board switches to
the new index. After the wait, the clean-up walks the old index again, removing its key
from every item, and the move ends. Writes keyed by an older layout meanwhile are put right
by the aggregator (``podium.stream.placements``)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TypeVar

from podium import fanout, layouts, periods
from podium.boards import BoardService
from podium.errors import Conflict, NotFound, Throttled, WriteUnconfirmed
from podium.keys import just_above, member_of_key, member_partition, rank_partition_key
from podium.log import logger
from podium.models import Board, BoardSettings, Checkpoint, Reshard, other_index
from podium.periods import ALL_TIME
from podium.ports import IndexReader, ReshardStore
from podium.values import frozen

T = TypeVar("T")

PAGE = 200  # index keys read at once; their updates are recorded together
LEASE_MARGIN = timedelta(seconds=30)  # a run's lease outlives its budget by this much
MOST_BACKOFF = 2.0  # seconds between two tries of one key's write, at most
MOST_PERIODS = 1000  # periods a walk covers at most (retainPeriods is at most a few hundred)


def periods_to_walk(settings: BoardSettings, started_at: datetime, now: datetime) -> list[str]:
    """Every period whose items may be keyed in the old index, oldest first: those kept
    when the move started, and every one begun since (written with both keys)."""
    if settings.reset == "never":
        return [ALL_TIME]
    current = periods.period_of(settings.reset, now)
    first = periods.period_of(settings.reset, started_at)
    period = periods.shift(settings.reset, first, -settings.retain_periods)
    found = [period]
    while period != current and len(found) < MOST_PERIODS:
        period = periods.shift(settings.reset, period, 1)
        found.append(period)
    return found


def walk(
    settings: BoardSettings, reshard: Reshard, checkpoint: Checkpoint | None, now: datetime
) -> Iterator[Checkpoint]:
    """A walk's stops from ``checkpoint`` on: each (period, old shard) to walk, the first
    one from where the checkpoint left it."""
    order = [
        (p, s) for p in periods_to_walk(settings, reshard.started_at, now) for s in range(reshard.from_shards)
    ]
    start = 0
    if checkpoint is not None and (checkpoint.period, checkpoint.shard) in order:
        start = order.index((checkpoint.period, checkpoint.shard))
    for number, (period, shard) in enumerate(order[start:]):
        yield checkpoint if number == 0 and checkpoint is not None else Checkpoint(period, shard)


@frozen
class RunReport:
    """What one worker run did."""

    boards: int = 0  # boards it worked on
    copied: int = 0  # score items it keyed in a new index
    ended: int = 0  # moves it ended
    failed: tuple[str, ...] = ()  # boards whose step failed (the others went on)


class ReshardsFailed(Exception):
    """Some boards' moves failed a step; the others went on. Raised at the end of the run
    so that the failure shows (the next run goes on from the checkpoints anyway)."""

    def __init__(self, report: RunReport) -> None:
        super().__init__(f"re-sharding failed for {len(report.failed)} board(s): {', '.join(report.failed)}")
        self.report = report


class _TimeUp(Exception):
    """A key write still refused when the run's time for the board ran out."""


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
        if reshard is not None and reshard.switched_at is None and reshard.ended_at is None:
            raise Conflict(f"board {board_id} is being re-sharded to {reshard.to_shards} shards already")
        if shards == board.settings.shards:
            raise Conflict(f"board {board_id} has {shards} shards already")
        if not layouts.is_settled(reshard, now, self.timing):
            raise Conflict(
                f"board {board_id} is still finishing its previous re-shard (its old index is being"
                " emptied): try again in a minute"
            )
        settled = now - self.timing.wait
        index, count = board.settings.index, board.settings.shards
        if not self.store.start_reshard(board_id, index, count, shards, now, settled):
            raise Conflict(f"board {board_id} changed meanwhile (another re-shard?): read it and try again")
        started = replace(board, reshard=Reshard(count, shards, now, from_index=index))
        return self.boards.as_shown(started)

    def run_reshards(self, budget: timedelta, owner: str | None = None) -> RunReport:
        """Carry every move on within ``budget``: one board after another, each from its
        checkpoint, each given an equal share of the time left (so one big move does not
        starve the others). A board whose step fails is logged and left for the next run;
        the others go on, and ReshardsFailed is raised at the end."""
        owner = owner or uuid.uuid4().hex
        deadline = self.monotonic() + budget.total_seconds()
        report = RunReport()
        moving = self.store.moving_boards()
        for number, board_id in enumerate(moving):
            now = self.monotonic()
            if now >= deadline:
                break
            share = now + (deadline - now) / (len(moving) - number)
            try:
                copied, ended = self.continue_move(board_id, owner, share, budget)
            except Exception as error:  # one board's failure must not stop the others
                logger.error("re-sharding failed", extra={"boardId": board_id}, exc_info=error)
                report = replace(report, boards=report.boards + 1, failed=(*report.failed, board_id))
                continue
            report = replace(
                report,
                boards=report.boards + 1,
                copied=report.copied + copied,
                ended=report.ended + int(ended),
            )
        if report.failed:
            raise ReshardsFailed(report)
        return report

    def continue_move(
        self, board_id: str, owner: str, deadline: float, budget: timedelta
    ) -> tuple[int, bool]:
        """One board's move, from its checkpoint, as far as the phases and the time allow:
        the items it keyed in the new index, and whether the move ended."""
        found = self.store.reshard_progress(board_id)
        if found is None or found[0].reshard is None or found[0].reshard.ended_at is not None:
            self.store.forget_reshard(board_id)  # gone, or ended with its marker left behind
            return 0, False
        board, checkpoint = found
        reshard = found[0].reshard
        now = self.boards.clock()
        copying = layouts.may_copy(reshard, now, self.timing)
        if not copying and not layouts.may_clean(reshard, now, self.timing):
            return 0, False  # some instance may still work by the phase before: next run
        if not self.store.claim_reshard(board_id, owner, _ms(now), _ms(now + budget + LEASE_MARGIN)):
            return 0, False  # another worker has it
        walker = _Walk(self, board, reshard, owner, deadline)
        if copying:
            if not walker.walk_old_index(checkpoint, walker.copy_page) or not walker.complete_new_index():
                self.store.release_reshard(board_id, owner)  # the next run goes on at once
                return walker.copied, False
            self.store.switch_reshard(
                board_id, owner, other_index(reshard.from_index), reshard.to_shards, self.boards.clock()
            )
            return walker.copied, False  # switched (or the lease lost): the clean-up is next
        if not walker.walk_old_index(checkpoint, walker.clean_page):
            self.store.release_reshard(board_id, owner)
            return 0, False
        return 0, self.store.end_reshard(board_id, owner, self.boards.clock())


class _Walk:
    """One run's walk of one board's old index, page by page, from a checkpoint."""

    def __init__(
        self, service: ReshardService, board: Board, reshard: Reshard, owner: str, deadline: float
    ) -> None:
        self.service, self.board, self.reshard = service, board, reshard
        self.owner, self.deadline = owner, deadline
        self.new_index = other_index(reshard.from_index)
        self.copied = 0

    @property
    def store(self) -> ReshardStore:
        return self.service.store

    @property
    def index(self) -> IndexReader:
        return self.service.index

    def walk_old_index(self, checkpoint: Checkpoint | None, handle: Callable[[str, list[str]], int]) -> bool:
        """Walk every stop from ``checkpoint``, ``handle`` each page: whether it got to the end."""
        now = self.service.boards.clock()
        for stop in walk(self.board.settings, self.reshard, checkpoint, now):
            if not self._walk_partition(stop, handle):
                return False
        return True

    def _walk_partition(self, stop: Checkpoint, handle: Callable[[str, list[str]], int]) -> bool:
        """One old partition a page at a time, the checkpoint recorded after each page:
        whether the partition is done (False: the time is up or the lease was lost)."""
        partition = rank_partition_key(self.board.board_id, stop.period, stop.shard, self.reshard.from_index)
        after = stop.after
        while True:
            if self.service.monotonic() >= self.deadline:
                return False
            page = self.index.keys_in_range(partition, just_above(after) if after else None, None, limit=PAGE)
            try:
                count = handle(stop.period, page)
            except _TimeUp:
                return False  # the page is done again by the next run (every write is idempotent)
            self.copied += count
            after = page[-1] if page else after
            # A checkpoint at a partition's last key: a resumed run finds it done with one query.
            checkpoint = Checkpoint(stop.period, stop.shard, after)
            if not self.store.advance_reshard(self.board.board_id, self.owner, count, checkpoint):
                return False  # the lease was lost: its new holder goes on
            if len(page) < PAGE:
                return True

    def copy_page(self, period: str, page: list[str]) -> int:
        """Key every item of the page in the new index, in parallel: how many were."""
        return self._key_in_new_index(period, [member_of_key(k) for k in page])

    def clean_page(self, period: str, page: list[str]) -> int:
        """Take every item of the page out of the old index, in parallel."""
        board_id, index = self.board.board_id, self.reshard.from_index

        def remove_key(key: str) -> bool:
            member_id = member_of_key(key)
            return self._again(lambda: self.store.remove_index_key(board_id, member_id, period, index))

        fanout.gather(remove_key, page)
        return 0

    def _key_in_new_index(self, period: str, members: list[str]) -> int:
        board_id, count = self.board.board_id, self.reshard.to_shards

        def set_key(member_id: str) -> bool:
            partition = member_partition(board_id, period, member_id, self.new_index, count)
            return self._again(lambda: self.store.set_index_key(board_id, member_id, period, partition))

        return sum(fanout.gather(set_key, members))

    def _again(self, write: Callable[[], T]) -> T:
        """One key's write, tried again on a throttle or an unconfirmed answer until it
        goes through or the run's time for the board is up (_TimeUp): setting or removing
        an index key is idempotent, so a page is never given up, nor its checkpoint left
        unmoved for ever, for a few refused writes among its 200 (DynamoDB Local refuses
        many under load: "too long waiting for a lock")."""
        attempt = 0
        while True:
            try:
                return write()
            except (Throttled, WriteUnconfirmed):
                pause = min(MOST_BACKOFF, 0.05 * 2**attempt)
                if self.service.monotonic() + pause >= self.deadline:
                    raise _TimeUp from None
                time.sleep(pause)
                attempt += 1

    def complete_new_index(self) -> bool:
        """Before the switch: read both indexes whole and key in the new one every member
        the old one has and it lacks (an item a writer that had not seen the move wrote
        again after the copy passed it, the stream's fix-up not in yet). Past the copy
        phase's start every writer sets both keys, so none is missing after this.
        Whether it finished in time."""
        now = self.service.boards.clock()
        for period in periods_to_walk(self.board.settings, self.reshard.started_at, now):
            if self.service.monotonic() >= self.deadline:
                return False
            old = self._members_in_index(period, self.reshard.from_index, self.reshard.from_shards)
            new = self._members_in_index(period, self.new_index, self.reshard.to_shards)
            missing = sorted(old - new)
            try:
                self.copied += self._key_in_new_index(period, missing)
            except _TimeUp:
                return False
        return True

    def _members_in_index(self, period: str, index: str, shards: int) -> set[str]:
        board_id = self.board.board_id
        partitions = [rank_partition_key(board_id, period, shard, index) for shard in range(shards)]
        pages = fanout.gather(lambda p: self.index.keys_in_range(p, None, None), partitions)
        return {member_of_key(key) for page in pages for key in page}


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
