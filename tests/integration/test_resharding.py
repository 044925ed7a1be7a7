"""Re-sharding against DynamoDB Local: the copy keys every item in the second index on the
new count while reads stay the listing from the first, the board switches to the second in
one step, the clean-up empties the first, and the move ends; a run killed midway is resumed
by another worker once its lease runs out; a writer that had not seen the move is put right
by the stream's fix-up (and, before the switch, by the worker's check)."""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

import pytest

from podium import keys, resharding
from podium.boards import BoardService
from podium.dal import Database, schema
from podium.errors import Conflict, Throttled, WriteUnconfirmed
from podium.layouts import Timing
from podium.members import MemberService
from podium.periods import ALL_TIME
from podium.resharding import ReshardService
from podium.stream.placements import fix_placements
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import TableStream, TickingClock, unique_id

pytestmark = pytest.mark.integration
TIMING = Timing(timedelta(seconds=1), timedelta(seconds=1))
TO_COPY = TIMING.wait  # after the start: every writer sets both keys
TO_CLEAN = TIMING.wait + TIMING.margin  # after the switch: no writer or reader uses the old index


class Crash(BaseException):  # a kill: no handler of the worker's runs
    """A worker killed midway."""


def services(store: Database, clock: TickingClock, timing: Timing = TIMING) -> Services:
    built = Services(store, clock=clock)
    built.__dict__["boards"] = BoardService(store.boards, clock, timing)  # the layout kept ``timing.cache``
    return built


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of 16 keys, so that a board of a few hundred members takes many."""
    monkeypatch.setattr(resharding, "PAGE", 16)


def board_of(service: Services, shards: int, members: int, seed: int) -> tuple[str, dict[str, Decimal]]:
    board = unique_id("resharded")
    service.boards.put_board(board, board_request({"shards": shards, "operator": "set"}))
    draw = random.Random(seed)
    scores = {f"m{n:04d}": Decimal(draw.randrange(10_000)).scaleb(-1) for n in range(members)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score}))
    return board, scores


def index_keys(store: Database, board: str, members: list[str]) -> dict[str, tuple[str | None, str | None]]:
    """Each member's score item's keys in the two indexes (``rpk``, ``rpkB``), from the table."""
    found = {}
    for member in members:
        item = store.tables.get(schema.score_key(board, member, ALL_TIME), consistent=True)
        assert item is not None
        found[member] = (item.get("rpk", {}).get("S"), item.get("rpkB", {}).get("S"))
    return found


def in_b(board: str, members: list[str], shards: int) -> dict[str, tuple[str | None, str | None]]:
    """Keys of members keyed in index B only, on ``shards`` shards."""
    return {m: (None, keys.member_partition(board, ALL_TIME, m, "B", shards)) for m in members}


def index_size(store: Database, board: str, index: str, shards: int) -> int:
    """The entries of the board in one index's first ``shards`` partitions."""
    partitions = [keys.rank_partition_key(board, ALL_TIME, shard, index) for shard in range(shards)]
    return sum(store.index.count_range(p, None, None) for p in partitions)


def listing(service: Services, board: str) -> list[tuple[str, Decimal]]:
    page = service.reads.top(board, 1000, None, False, consistent=True)
    return [(e.member_id, e.score) for e in page.entries]


def sorted_model(scores: dict[str, Decimal]) -> list[tuple[str, Decimal]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def test_a_killed_copy_is_resumed_by_another_worker_then_the_board_switches_and_the_old_index_empties(
    store: Database, small_pages: None
) -> None:
    # Given 200 members on 3 shards in index A, and a move to 7 started, its copy phase on
    clock = TickingClock()
    service = services(store, clock)
    board, scores = board_of(service, 3, 200, seed=1)
    service.resharding.start(board, 7)
    clock.moment += TO_COPY

    # When a worker is killed after a few pages (its lease still held)
    ticks = iter(range(7))

    def dying() -> float:
        if next(ticks, None) is None:
            raise Crash
        return 0.0

    with pytest.raises(Crash):
        ReshardService(service.boards, store.reshards, store.index, monotonic=dying).run_reshards(
            timedelta(minutes=1)
        )
    midway = store.reshards.reshard_progress(board)
    assert midway is not None
    assert midway[1] is not None  # a checkpoint was recorded
    # Then reads are still the listing, from index A, and the board shows its move
    assert listing(service, board) == sorted_model(scores)
    shown = service.boards.get_board(board).to_json()
    assert (shown["shards"], shown["reshard"]["toShards"]) == (3, 7)
    # And another worker cannot take over while the lease holds, but can once it is out
    other = ReshardService(service.boards, store.reshards, store.index)
    assert other.run_reshards(timedelta(minutes=1)).copied == 0
    clock.moment += timedelta(minutes=2)
    other.run_reshards(timedelta(minutes=1))

    # Then the board has switched: 7 shards in index B, no move shown, every member in both
    # indexes (an instance that has not seen the switch still reads A, whole)
    shown = service.boards.get_board(board).to_json()
    assert (shown["shards"], "reshard" in shown) == (7, False)
    assert index_size(store, board, "A", 3) == index_size(store, board, "B", 7) == len(scores)
    assert listing(service, board) == sorted_model(scores)
    copied = store.reshards.reshard_progress(board)[0].reshard.copied  # type: ignore[index,union-attr]
    assert len(scores) <= copied < 2 * len(scores)  # the killed run's last page may count again

    # When the clean-up's time has come and a worker runs
    clock.moment += TO_CLEAN
    assert other.run_reshards(timedelta(minutes=1)).ended == 1
    # Then every item is keyed in B on its shard under 7 only, A is empty, reads agree
    assert index_keys(store, board, sorted(scores)) == in_b(board, sorted(scores), 7)
    assert index_size(store, board, "A", 3) == 0
    assert listing(service, board) == sorted_model(scores)


def test_a_shrink_copies_each_member_once_and_the_next_move_waits_for_the_clean_up(
    store: Database, small_pages: None
) -> None:
    # Given 120 members on 6 shards, moved to 2 by uninterrupted runs
    clock = TickingClock()
    service = services(store, clock)
    board, scores = board_of(service, 6, 120, seed=2)
    service.resharding.start(board, 2)
    with pytest.raises(Conflict, match="already"):
        service.resharding.start(board, 4)  # a second move while one runs
    assert service.resharding.run_reshards(timedelta(minutes=1)).copied == 0  # too early
    clock.moment += TO_COPY
    assert service.resharding.run_reshards(timedelta(minutes=1)).copied == len(scores)
    # While the old index is being emptied, another move is refused, saying why
    with pytest.raises(Conflict, match="previous re-shard"):
        service.resharding.start(board, 4)
    clock.moment += TO_CLEAN
    assert service.resharding.run_reshards(timedelta(minutes=1)).ended == 1
    assert service.resharding.run_reshards(timedelta(minutes=1)).boards == 0  # nothing left
    assert index_keys(store, board, sorted(scores)) == in_b(board, sorted(scores), 2)
    assert service.boards.get_board(board).settings.shards == 2

    # When, the end seen everywhere, the board is moved on to 4: back into index A
    clock.moment += TIMING.wait
    service.resharding.start(board, 4)
    clock.moment += TO_COPY
    service.resharding.run_reshards(timedelta(minutes=1))
    clock.moment += TO_CLEAN
    assert service.resharding.run_reshards(timedelta(minutes=1)).ended == 1
    # Then every item is keyed in A on its shard under 4 only, and reads are the listing
    want = {m: (keys.member_partition(board, ALL_TIME, m, "A", 4), None) for m in scores}
    assert index_keys(store, board, sorted(scores)) == want
    assert listing(service, board) == sorted_model(scores)


def test_a_stale_writers_item_gets_its_new_key_from_the_stream_and_loses_its_old_one_in_the_clean_up(
    store: Database, table_stream: TableStream
) -> None:
    # Given a board moving from 2 to 5 shards, its copy done up to the switch's check, and a
    # writer whose layout was read before the move (it keeps it 10 minutes: a stale instance)
    clock = TickingClock()
    service = services(store, clock)
    board, scores = board_of(service, 2, 40, seed=3)
    stale_boards = BoardService(store.boards, clock, Timing(timedelta(minutes=10), timedelta(0)))
    stale_boards.settings(board)
    stale = MemberService(stale_boards, store.members, store.eventlog, store.social)
    service.resharding.start(board, 5)
    clock.moment += TO_COPY
    member = sorted(scores)[0]
    store.reshards.set_index_key(
        board, member, ALL_TIME, keys.member_partition(board, ALL_TIME, member, "B", 5)
    )

    # When the stale writer writes the member again: its item loses its key in B
    stale.put_member(board, member, member_request({"score": Decimal(777)}))
    assert index_keys(store, board, [member])[member][1] is None
    records = [
        r
        for r in table_stream.records()
        if r["dynamodb"]["Keys"]["pk"]["S"] == schema.member_pk(board, member)
        and r["dynamodb"]["Keys"]["sk"]["S"] == schema.score_sk(ALL_TIME)
        and r["dynamodb"].get("NewImage", {}).get("s", {}).get("N") == "777"
    ]

    # Then the stream's fix-up (a consumer that has read the move) keys it in B again, and a
    # redelivery changes nothing
    consumer = BoardService(store.boards, clock, TIMING)
    assert fix_placements(records, store.reshards, consumer.settings) == 1
    both = (
        keys.member_partition(board, ALL_TIME, member, "A", 2),
        keys.member_partition(board, ALL_TIME, member, "B", 5),
    )
    assert index_keys(store, board, [member])[member] == both
    assert fix_placements(records, store.reshards, consumer.settings) == 0

    # When the board switches and is cleaned, and then the same stale record comes again
    service.resharding.run_reshards(timedelta(minutes=1))
    clock.moment += TO_CLEAN
    assert service.resharding.run_reshards(timedelta(minutes=1)).ended == 1
    stale.put_member(board, member, member_request({"score": Decimal(779)}))  # keyed in A again
    late = [
        r
        for r in table_stream.records()
        if r["dynamodb"]["Keys"]["pk"]["S"] == schema.member_pk(board, member)
        and r["dynamodb"].get("NewImage", {}).get("s", {}).get("N") == "779"
    ]
    # Then the fix-up takes it out of A and keys it in B: the board reads B, whole
    consumer = BoardService(store.boards, clock, TIMING)
    assert fix_placements(late, store.reshards, consumer.settings) == 2
    assert index_keys(store, board, [member]) == in_b(board, [member], 5)
    assert listing(service, board) == sorted_model({**scores, member: Decimal(779)})


class Refusing:
    """The re-shard store of a database that refuses key writes, as DynamoDB Local does
    under load ("too long waiting for a lock": a 500, after which a write is unconfirmed)
    or a throttled table does: each key of a board of ``refusals`` that many times (none
    applied); and the moves of ``broken`` boards cannot even be read."""

    def __init__(self, store: Database, refusals: dict[str, int], broken: set[str]) -> None:
        self.store, self.refusals, self.broken = store.reshards, refusals, broken
        self.tries: dict[tuple[str, str], int] = {}

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def _refuse(self, board_id: str, member_id: str) -> None:
        tried = self.tries.get((board_id, member_id), 0)
        self.tries[(board_id, member_id)] = tried + 1
        if tried < self.refusals.get(board_id, 0):
            raise Throttled("throttled") if tried % 2 else WriteUnconfirmed("a 500: waiting for a lock")

    def set_index_key(self, board_id: str, member_id: str, period: str, partition: str) -> bool:
        self._refuse(board_id, member_id)
        return self.store.set_index_key(board_id, member_id, period, partition)

    def remove_index_key(self, board_id: str, member_id: str, period: str, index: str) -> bool:
        self._refuse(board_id, member_id)
        return self.store.remove_index_key(board_id, member_id, period, index)

    def reshard_progress(self, board_id: str) -> object:
        if board_id in self.broken:
            raise RuntimeError(f"the board item of {board_id} cannot be read")
        return self.store.reshard_progress(board_id)


def test_refused_key_writes_are_tried_again_and_one_board_s_failure_does_not_stop_the_others(
    store: Database,
) -> None:
    # Given three boards moving at once: one whose key writes are each refused 3 times,
    # one whose key writes are refused for as long as the run lasts, and one that fails
    clock = TickingClock()
    service = services(store, clock)
    boards = dict(board_of(service, 2, members, seed) for members, seed in ((60, 4), (30, 5), (30, 6)))
    patient, stuck, broken = boards
    scores = boards[patient]
    for board in boards:
        service.resharding.start(board, 5)
    clock.moment += TO_COPY
    refusing = Refusing(store, {patient: 3, stuck: 10**9}, {broken})
    worker = ReshardService(service.boards, refusing, store.index)  # type: ignore[arg-type]

    # When a worker runs (6 seconds: a share of 2 or more each)
    with pytest.raises(resharding.ReshardsFailed) as failed:
        worker.run_reshards(timedelta(seconds=6))

    # Then the patient board is copied whole, each key written once it went through; the
    # stuck one gave up in time with its checkpoint unmoved; the broken one is named
    assert failed.value.report.failed == (broken,)
    assert failed.value.report.copied == len(scores)
    assert {refusing.tries[(patient, m)] for m in scores} == {4}
    assert index_size(store, patient, "B", 5) == len(scores)
    assert index_size(store, stuck, "B", 5) == 0
    assert service.boards.get_board(stuck).to_json()["reshard"]["copied"] == 0

    # When the database takes writes again and the board can be read: every move ends
    refusing.refusals.clear()
    refusing.broken.clear()
    worker.run_reshards(timedelta(minutes=1))
    clock.moment += TO_CLEAN
    assert worker.run_reshards(timedelta(minutes=1)).ended == 3
    for board, members in boards.items():
        assert index_keys(store, board, sorted(members)) == in_b(board, sorted(members), 5)
        assert listing(service, board) == sorted_model(members)
