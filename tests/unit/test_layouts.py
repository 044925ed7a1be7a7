"""The pure decisions of a re-shard (podium.layouts, podium.resharding): which shard count
writes place at and which partitions reads cover over a move's life, which members move,
and the backfill's walk, each against a plain model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from podium import keys, layouts
from podium.errors import ValidationError
from podium.layouts import Timing
from podium.models import BoardSettings, Checkpoint, Reshard
from podium.resharding import periods_to_move, walk
from podium.validation import reshard_shards

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
TIMING = Timing(timedelta(seconds=5))
SECOND = timedelta(seconds=1)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(("from_shards", "to_shards"), [(3, 17), (17, 3), (5, 2), (1, 100)])
def test_over_a_moves_life_reads_cover_every_partition_an_item_can_be_on(
    from_shards: int, to_shards: int
) -> None:
    # Given a board moving from one count to another, started at T0
    settings = BoardSettings(shards=from_shards)
    on = Reshard(from_shards, to_shards, T0)
    ended = Reshard(from_shards, to_shards, T0, ended_at=at(60))
    members = [f"member-{n}" for n in range(300)]

    def readable(s: BoardSettings) -> set[str]:
        return set(keys.partitions("b", s, "all"))

    def placed(member: str, count: int) -> str:
        return keys.rank_partition_key("b", "all", keys.shard_of(member, count))

    # When the layout is asked at each moment, Then:
    # before the switch writes still go to the old count, and reads cover both layouts
    before = layouts.effective(settings, on, at(0), TIMING)
    assert before.shards == from_shards
    assert before.read_shards == max(from_shards, to_shards)
    # after the switch (every instance has seen the move) writes go to the new count
    switched = layouts.effective(settings, on, T0 + TIMING.switch, TIMING)
    assert switched.shards == to_shards
    # every member's place under either layout is read while the move is on and just after
    after_end = BoardSettings(shards=to_shards)
    for s in (before, switched, layouts.effective(after_end, ended, at(60) + TIMING.linger - SECOND, TIMING)):
        assert {placed(m, n) for m in members for n in (from_shards, to_shards)} <= readable(s)
    # and once the end is past the linger, only the new layout is read
    settled = layouts.effective(after_end, ended, at(60) + TIMING.linger, TIMING)
    assert settled == after_end
    assert readable(settled) == {keys.rank_partition_key("b", "all", n) for n in range(to_shards)}


def test_the_backfill_begins_after_the_switch_and_a_new_move_waits_for_the_linger() -> None:
    on = Reshard(3, 17, T0)
    assert TIMING.cache < TIMING.switch < TIMING.begin
    assert not layouts.may_begin(on, T0 + TIMING.switch, TIMING)
    assert layouts.may_begin(on, T0 + TIMING.begin, TIMING)
    ended = Reshard(3, 17, T0, ended_at=at(100))
    assert not layouts.is_settled(on, at(1000), TIMING)
    assert not layouts.is_settled(ended, at(100) + TIMING.linger - SECOND, TIMING)
    assert layouts.is_settled(ended, at(100) + TIMING.linger, TIMING)
    assert layouts.is_settled(None, T0, TIMING)


def test_a_member_moves_exactly_when_its_shard_under_the_new_count_is_another() -> None:
    for n in range(500):
        member = f"player-{n}"
        old, new = keys.shard_of(member, 3), keys.shard_of(member, 17)
        assert layouts.destination(member, old, 17) == (None if old == new else new)


def test_the_walk_covers_every_period_kept_and_every_old_shard_once_and_resumes_at_its_checkpoint() -> None:
    # Given a weekly board keeping 2 past periods, moving from 3 shards
    settings = BoardSettings(shards=3, reset="weekly", retain_periods=2)
    reshard = Reshard(3, 17, datetime(2026, 11, 25, tzinfo=UTC))
    # Then the periods are the current one when it started and the 2 before
    assert periods_to_move(settings, reshard.started_at) == ["2026-W48", "2026-W47", "2026-W46"]
    stops = list(walk(settings, reshard, None))
    expected = [(p, s) for p in ("2026-W48", "2026-W47", "2026-W46") for s in range(3)]
    assert [(c.period, c.shard) for c in stops] == expected
    assert all(c.after is None for c in stops)
    # And a checkpoint resumes where it was: the same partition after its key, then the rest
    resumed = list(walk(settings, reshard, Checkpoint("2026-W47", 1, "k")))
    assert resumed[0] == Checkpoint("2026-W47", 1, "k")
    assert [(c.period, c.shard) for c in resumed] == expected[4:]
    assert periods_to_move(BoardSettings(), reshard.started_at) == ["all"]


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
