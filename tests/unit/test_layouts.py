"""The pure decisions of a re-shard (podium.layouts, podium.resharding): which index reads
use and which keys writes set over a move's life, against a model of instances that keep a
layout a while and requests that run a while; the phases' timing; members' keys; and the
walk."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from podium import keys, layouts
from podium.errors import ValidationError
from podium.layouts import Phase, Timing
from podium.models import Board, BoardSettings, Checkpoint, Reshard, ScoreState, index_of_partition
from podium.resharding import periods_to_walk, walk
from podium.validation import reshard_shards

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
TIMING = Timing(timedelta(seconds=5), timedelta(seconds=3))
SECOND = timedelta(seconds=1)
SWITCHED = T0 + timedelta(seconds=40)  # when the worker switched the board
ENDED = SWITCHED + TIMING.wait + TIMING.margin + timedelta(seconds=10)  # and ended the move


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def board_at(moment: datetime, from_shards: int, to_shards: int) -> tuple[BoardSettings, Reshard | None]:
    """The board item as stored at ``moment``: a move from index A started at T0, switched
    at SWITCHED, ended at ENDED."""
    if moment < T0:
        return BoardSettings(shards=from_shards), None
    if moment < SWITCHED:
        return BoardSettings(shards=from_shards), Reshard(from_shards, to_shards, T0)
    settings = BoardSettings(shards=to_shards, index="B")
    ended = ENDED if moment >= ENDED else None
    return settings, Reshard(from_shards, to_shards, T0, ended_at=ended, switched_at=SWITCHED)


def seconds_between(first: datetime, last: datetime) -> list[datetime]:
    count = int((last - first).total_seconds())
    return [first + n * SECOND for n in range(count + 1)]


def keyed(settings: BoardSettings) -> set[str]:
    """The indexes a write made with these settings keys the member in."""
    return {settings.index} | ({settings.also[0]} if settings.also else set())


@pytest.mark.parametrize(("from_shards", "to_shards"), [(3, 17), (17, 3), (5, 2)])
def test_at_every_moment_every_write_keys_the_member_in_every_index_a_reader_may_read(
    from_shards: int, to_shards: int
) -> None:
    # Given a move's life as the board item shows it, and instances that keep what they
    # read of it for up to ``cache``, and requests that run for up to ``margin``
    for now in seconds_between(T0 - 10 * SECOND, ENDED + TIMING.wait):
        # When a reader reads now by what it read of the board up to ``wait`` ago
        readers = {
            board_at(read, from_shards, to_shards)[0].index
            for read in seconds_between(now - TIMING.wait, now)
        }
        # and a writer writes now by the layout it worked out up to ``margin`` ago from
        # what it read up to ``cache`` before that
        for began in seconds_between(now - TIMING.margin, now):
            for read in seconds_between(began - TIMING.cache, began):
                layout = layouts.effective(*board_at(read, from_shards, to_shards), began, TIMING)
                # Then the write keys the member in every index any reader may be reading
                assert readers <= keyed(layout), (now, began, read)
                # and each of its keys is laid out on that index's count
                counts = {layout.index: layout.shards, **dict([layout.also] if layout.also else [])}
                assert counts == {i: from_shards if i == "A" else to_shards for i in counts}
                # and from the copy's start to the switch, every write has the new key
                if T0 + TIMING.wait <= now < SWITCHED:
                    assert "B" in keyed(layout)
                # and once the clean-up may run, no write has the old key
                if now >= SWITCHED + TIMING.wait + TIMING.margin:
                    assert keyed(layout) == {"B"}


def test_a_reader_reads_one_index_with_one_layout_and_the_api_shows_the_move_until_the_switch() -> None:
    before, on = board_at(at(1), 3, 17)
    assert keys.partitions("b", before, "all") == [keys.rank_partition_key("b", "all", n) for n in range(3)]
    assert Board("b", before, None, T0, reshard=on).to_json()["reshard"]["toShards"] == 17
    after, switched = board_at(SWITCHED, 3, 17)
    assert keys.partitions("b", after, "all") == [f"b#all#B{n}" for n in range(17)]
    shown = Board("b", after, None, T0, reshard=switched).to_json()
    assert (shown["shards"], "reshard" in shown) == (17, False)
    assert {index_of_partition(p) for p in keys.partitions("b", after, "all")} == {"B"}


def test_the_worker_copies_once_the_start_is_seen_cleans_once_the_switch_is_and_a_new_move_waits() -> None:
    on = Reshard(3, 17, T0)
    assert layouts.phase(on, T0 + TIMING.wait - SECOND, TIMING) is Phase.STARTED
    assert not layouts.may_copy(on, T0 + TIMING.wait - SECOND, TIMING)
    assert layouts.may_copy(on, T0 + TIMING.wait, TIMING)
    assert not layouts.may_clean(on, at(1000), TIMING)
    switched = replace(on, switched_at=SWITCHED)
    assert not layouts.may_copy(switched, at(1000), TIMING)
    assert layouts.phase(switched, SWITCHED + TIMING.wait, TIMING) is Phase.CLEANING
    assert not layouts.may_clean(switched, SWITCHED + TIMING.wait + TIMING.margin - SECOND, TIMING)
    assert layouts.may_clean(switched, SWITCHED + TIMING.wait + TIMING.margin, TIMING)
    ended = replace(switched, ended_at=ENDED)
    assert not layouts.is_settled(on, at(1000), TIMING)
    assert not layouts.is_settled(switched, at(1000), TIMING)
    assert not layouts.is_settled(ended, ENDED + TIMING.wait - SECOND, TIMING)
    assert layouts.is_settled(ended, ENDED + TIMING.wait, TIMING)
    assert layouts.is_settled(None, T0, TIMING)


def test_a_members_key_in_either_index_depends_on_its_id_and_the_count_only() -> None:
    for n in range(500):
        member = f"player-{n}"
        a = keys.member_partition("b", "all", member, "A", 3)
        b = keys.member_partition("b", "all", member, "B", 17)
        assert a == f"b#all#{keys.shard_of(member, 3)}"
        assert b == f"b#all#B{keys.shard_of(member, 17)}"
        assert (index_of_partition(a), index_of_partition(b)) == ("A", "B")
        # a placement keys it in the index read, and while a move runs in the other
        state = ScoreState(Decimal(n), 1, 1)
        moving = BoardSettings(shards=3, also=("B", 17))
        assert keys.placement("b", moving, member, state, "all").partition == a
        assert keys.placement("b", moving, member, state, "all").also == b
        assert keys.placement("b", BoardSettings(shards=3), member, state, "all").also is None


def test_the_walk_covers_every_period_kept_or_begun_since_and_every_old_shard_once_and_resumes() -> None:
    # Given a weekly board keeping 2 past periods, moving from 3 shards, a week after it began
    settings = BoardSettings(shards=3, reset="weekly", retain_periods=2)
    reshard = Reshard(3, 17, datetime(2026, 11, 25, tzinfo=UTC))
    now = reshard.started_at + timedelta(days=7)
    # Then the periods are the 2 kept before the start's, the start's, and the one begun since
    weeks = ["2026-W46", "2026-W47", "2026-W48", "2026-W49"]
    assert periods_to_walk(settings, reshard.started_at, now) == weeks
    stops = list(walk(settings, reshard, None, now))
    expected = [(p, s) for p in weeks for s in range(3)]
    assert [(c.period, c.shard) for c in stops] == expected
    assert all(c.after is None for c in stops)
    # And a checkpoint resumes where it was: the same partition after its key, then the rest
    resumed = list(walk(settings, reshard, Checkpoint("2026-W47", 1, "k"), now))
    assert resumed[0] == Checkpoint("2026-W47", 1, "k")
    assert [(c.period, c.shard) for c in resumed] == expected[4:]
    assert periods_to_walk(BoardSettings(), reshard.started_at, now) == ["all"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "shards is required"),
        ({"shards": 0}, "1 to 100"),
        ({"shards": 101}, "1 to 100"),
        ({"shards": "4"}, "1 to 100"),
        ({"shards": 4, "x": 1}, "unknown field x"),
    ],
)
def test_a_bad_body_is_refused_naming_the_field_and_its_limit(body: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        reshard_shards(body)


def test_a_good_body_gives_its_count() -> None:
    assert reshard_shards({"shards": 17}) == 17
