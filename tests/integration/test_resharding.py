"""Re-sharding against DynamoDB Local: the backfill moves every item to its shard under the
new count while reads stay the listing, a run killed midway is resumed by another worker
once its lease runs out, and a write placed by a stale layout is moved by the stream's
fix-up, which a newer write wins against."""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from podium import keys, resharding
from podium.boards import BoardService
from podium.dal import Database, schema
from podium.layouts import Timing
from podium.members import MemberService
from podium.periods import ALL_TIME
from podium.resharding import ReshardService
from podium.stream.placements import fix_placements
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import TickingClock, stream_records, unique_id

pytestmark = pytest.mark.integration
TIMING = Timing(timedelta(seconds=1))


class Crash(Exception):
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


def placements(store: Database, board: str, members: list[str]) -> dict[str, str]:
    """Each member's score item's ``rpk``, read from the table."""
    found = {}
    for member in members:
        item = store.tables.get(schema.score_key(board, member, ALL_TIME), consistent=True)
        assert item is not None
        found[member] = item["rpk"]["S"]
    return found


def listing(service: Services, board: str) -> list[tuple[str, Decimal]]:
    page = service.reads.top(board, 1000, None, False, consistent=True)
    return [(e.member_id, e.score) for e in page.entries]


def sorted_model(scores: dict[str, Decimal]) -> list[tuple[str, Decimal]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def test_a_killed_backfill_is_resumed_by_another_worker_and_every_item_ends_on_its_new_shard(
    store: Database, small_pages: None
) -> None:
    # Given 200 members on 3 shards, and a move to 7 started, its switch and start passed
    clock = TickingClock()
    service = services(store, clock)
    board, scores = board_of(service, 3, 200, seed=1)
    service.resharding.start(board, 7)
    clock.moment += TIMING.begin
    must_move = {m for m in scores if keys.shard_of(m, 3) != keys.shard_of(m, 7)}

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
    # Then reads are still the listing mid-move, the board shows it is moving
    assert listing(service, board) == sorted_model(scores)
    assert service.boards.get_board(board).to_json()["reshard"]["toShards"] == 7
    # And another worker cannot take over while the lease holds, but can once it is out
    other = ReshardService(service.boards, store.reshards, store.index)
    assert other.run_reshards(timedelta(minutes=1)).moved == 0
    clock.moment += timedelta(minutes=2)
    report = other.run_reshards(timedelta(minutes=1))
    assert report.ended == 1

    # Then every item sits on its shard under 7, the board has 7 shards, and reads agree
    board_now = service.boards.get_board(board).to_json()
    assert board_now["shards"] == 7
    assert "reshard" not in board_now
    want = {m: keys.rank_partition_key(board, ALL_TIME, keys.shard_of(m, 7)) for m in scores}
    assert placements(store, board, sorted(scores)) == want
    # (the members moved by the killed run's last page are not counted: copied may fall short)
    copied = store.reshards.reshard_progress(board)[0].reshard.copied  # type: ignore[index,union-attr]
    assert 0 < copied <= len(must_move)
    assert listing(service, board) == sorted_model(scores)


def test_an_uninterrupted_backfill_counts_every_member_it_moves_once_and_a_shrink_works_too(
    store: Database, small_pages: None
) -> None:
    clock = TickingClock()
    service = services(store, clock)
    board, scores = board_of(service, 6, 120, seed=2)
    service.resharding.start(board, 2)
    clock.moment += TIMING.begin
    report = service.resharding.run_reshards(timedelta(minutes=1))
    must_move = {m for m in scores if keys.shard_of(m, 6) != keys.shard_of(m, 2)}
    assert report.moved == len(must_move)
    assert store.reshards.reshard_progress(board)[0].reshard.copied == len(must_move)  # type: ignore[index,union-attr]
    want = {m: keys.rank_partition_key(board, ALL_TIME, keys.shard_of(m, 2)) for m in scores}
    assert placements(store, board, sorted(scores)) == want
    # A second run finds nothing to do
    assert service.resharding.run_reshards(timedelta(minutes=1)).boards == 0
    # And once the linger is over, reads cover the 2 partitions only, and still see everyone
    clock.moment += TIMING.linger
    assert service.boards.settings(board).read_shards == 2
    assert listing(service, board) == sorted_model(scores)


def test_a_stale_writers_item_is_moved_by_the_stream_and_a_newer_write_wins_the_race(
    store: Database, dynamodb_client: Any, dynamodb_endpoint: str
) -> None:
    # Given a board moving from 2 to 5 shards, past its switch, and a writer whose layout
    # was read before the move (it keeps it 10 minutes: a stale instance)
    clock = TickingClock()
    service = services(store, clock)
    board, scores = board_of(service, 2, 40, seed=3)
    stale_boards = BoardService(store.boards, clock, Timing(timedelta(minutes=10)))
    stale_boards.settings(board)
    stale = MemberService(stale_boards, store.members, store.eventlog, store.social)
    service.resharding.start(board, 5)
    clock.moment += TIMING.begin
    mover = next(m for m in scores if keys.shard_of(m, 2) != keys.shard_of(m, 5))
    racer = next(m for m in scores if m != mover and keys.shard_of(m, 2) != keys.shard_of(m, 5))

    # When the stale writer writes both members, placing them by 2 shards
    for member in (mover, racer):
        stale.put_member(board, member, member_request({"score": Decimal(777)}))
    old = placements(store, board, [mover, racer])
    assert old == {m: keys.rank_partition_key(board, ALL_TIME, keys.shard_of(m, 2)) for m in (mover, racer)}
    records = [
        r
        for r in stream_records(dynamodb_client, dynamodb_endpoint, store.tables.table)
        if r["dynamodb"]["Keys"]["pk"]["S"]
        in (schema.member_pk(board, mover), schema.member_pk(board, racer))
        and r["dynamodb"]["Keys"]["sk"]["S"] == schema.score_sk(ALL_TIME)
        and r["dynamodb"].get("NewImage", {}).get("s", {}).get("N") == "777"
    ]
    # and the racer is written again by an up-to-date writer before the stream gets there
    service.members.put_member(board, racer, member_request({"score": Decimal(778)}))

    # Then the stream's fix-up moves the mover to its shard under 5, and leaves the racer
    # where its newer write put it (its record no longer matches the item)
    assert fix_placements(records, store.reshards, service.boards.settings) == 1
    now = placements(store, board, [mover, racer])
    assert now == {m: keys.rank_partition_key(board, ALL_TIME, keys.shard_of(m, 5)) for m in (mover, racer)}
    # And a redelivery of the same records moves nothing
    assert fix_placements(records, store.reshards, service.boards.settings) == 0
