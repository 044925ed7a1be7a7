"""Rollups, the change-feed pattern of the reference architecture: a client writes one
board, and the stream carries each change of a member's score to every board in the
source's ``rollupTo``: an ``increment`` target adds the change (new minus old), a ``best``
target is offered the new score, a ``set`` target takes it. A new source member is a
change from 0 and is created in the target, with the source's data. Each change applies to
a target once (a ``ROLLUP#`` mark in the same transaction as the target's score)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal

from podium import keys, numbers, periods, retry
from podium.dal import schema
from podium.errors import AlreadyApplied, HiddenChanged, ItemMissing, ValidationError, VersionConflict
from podium.models import BoardSettings, ScoreState
from podium.ports import MemberStore
from podium.stream.records import ScoreRecord

SettingsOf = Callable[[str], BoardSettings]
Clock = Callable[[], datetime]


def rolled_up(target: BoardSettings, current: Decimal | None, old: Decimal, new: Decimal) -> Decimal:
    """The target member's score after the source's change from ``old`` to ``new``."""
    if target.operator == "increment":
        return numbers.add(current or Decimal(0), numbers.EXACT.subtract(new, old))
    if target.operator == "best" and current is not None:
        return new if target.is_better(new, current) else current
    return new


def roll_up(
    members: MemberStore, settings_of: SettingsOf, clock: Clock, record: ScoreRecord, target_id: str
) -> None:
    assert record.new is not None
    mark = schema.rollup_mark(target_id, record.event_id)
    target = settings_of(target_id)
    # The target's period is the one the change happened in (the same on redelivery).
    changed_at = datetime.fromtimestamp(record.changed_us / 1_000_000, tz=UTC)
    period = periods.period_of(target.reset, changed_at)
    old = record.old if record.old is not None else Decimal(0)
    # The target member is hidden only if hidden on the target (its own score item says,
    # or for its first score of a period its profile there: ``write_score``).
    first_hidden = False
    for _ in retry.attempts():
        applied, state = members.rollup_state(target_id, record.member_id, period, mark)
        if applied:
            return
        now = clock()
        new_score = _bounded(rolled_up(target, state.score if state else None, old, record.new))
        reached = int(now.timestamp() * 1_000_000)
        if state is not None and new_score == state.score:
            return  # nothing changes; doing nothing again on redelivery is the same
        if state is not None:
            new_state = state.then(new_score, reached)
        else:
            new_state = ScoreState.first(new_score, reached, first_hidden)
        placement = keys.placement(target_id, target, record.member_id, new_state, period)
        try:
            members.write_score(
                target_id,
                record.member_id,
                state.version if state else None,
                new_state,
                placement,
                period,
                mark,
            )
            return
        except AlreadyApplied:
            return
        except HiddenChanged as changed:
            first_hidden = changed.hidden
        except ItemMissing:  # the member first appears in the target: with the source's data
            data = members.get_data(record.board_id, [record.member_id])[record.member_id]
            score = (ScoreState.first(new_score, reached), placement)  # a new member is not hidden
            if members.create_member(target_id, record.member_id, data, score, period, now, mark=mark):
                return
        except VersionConflict:
            continue
    raise RuntimeError(f"could not roll {record.member_id} up into {target_id}: too much contention")


def _bounded(score: Decimal) -> Decimal:
    try:
        return numbers.check_score(score, "score")
    except ValidationError as error:
        # A poison record: the stream retries it, then parks it in the on-failure queue.
        raise ValueError(f"the rolled-up score leaves the bounds: {error.message}") from error
