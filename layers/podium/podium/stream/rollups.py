"""Rollups, the change-feed pattern of the reference architecture: a client writes one
board, and the stream carries each change of a member's score to every board in the
source's ``rollupTo``: an ``increment`` target adds the change (new minus old), a ``best``
target is offered the new score, a ``set`` target takes it. A new source member is a
change from 0 and is created in the target, with the source's data. Each change applies to
a target once (a ``ROLLUP#`` mark in the same transaction as the target's score).

Records may come late: a redelivery, a record redriven from the failure queue after newer
ones were applied. Adding changes up (``increment``) and keeping the best (``best``) come
out the same in any order. Taking a score (``set``) does not: so a ``set`` target member
remembers when the latest change it took was made (``ScoreState.rolled_up_us``, the source
score's reachedAt) and takes only a change made after it, from whichever source. It holds
the score of the change made last, whatever the order the records come in. The moment is a
time, not the source item's version: versions start again at 1 for a member deleted and
added back, times go on (and grow along an item's changes: ``ScoreState.then``). One
moment serves every source: a change older than the latest one taken from its own source
is older than the latest taken from any, and the score item stays under 1 KB.

A target keeps its own policy (docs/api.md, "Rollups"): its value limits bound what it
takes (an ``increment`` target the change, the others the new score), so a source with
looser limits cannot carry a score into it that its own submissions could not make; and a
member deleted from a target (a cheater removed from the global board) is not brought back
by its sources' later changes, until an admin adds it to the target again. A member hidden
on a target stays hidden there: the target's own items say so (``write_score``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

from podium import keys, numbers, periods, retry
from podium.dal import schema
from podium.errors import (
    AlreadyApplied,
    Contended,
    HiddenChanged,
    ItemMissing,
    ValidationError,
    VersionConflict,
)
from podium.models import BoardSettings, Limits, ScoreState
from podium.ports import MemberStore
from podium.stream.records import ScoreRecord
from podium.validation import within_limits

log = logging.getLogger(__name__)

SettingsOf = Callable[[str], BoardSettings]
Clock = Callable[[], datetime]
DeletedAt = Callable[[str, str], int | None]


def rolled_up(target: BoardSettings, current: Decimal | None, old: Decimal, new: Decimal) -> Decimal:
    """The target member's score after the source's change from ``old`` to ``new``."""
    if target.operator == "increment":
        return numbers.add(current or Decimal(0), numbers.EXACT.subtract(new, old))
    if target.operator == "best" and current is not None:
        return new if target.is_better(new, current) else current
    return new


def roll_up(
    members: MemberStore,
    settings_of: SettingsOf,
    clock: Clock,
    record: ScoreRecord,
    target_id: str,
    limits: Limits,
    deleted_at: DeletedAt,
) -> None:
    """Apply the record's change to the target board, once; ``limits``: the target's as
    they are now (they may change at any time); ``deleted_at``: when a member was last
    deleted from a board, if ever."""
    assert record.new is not None
    mark = schema.rollup_mark(target_id, record.event_id)
    target = settings_of(target_id)
    # The target's period is the one the change happened in (the same on redelivery).
    changed_at = datetime.fromtimestamp(record.changed_us / 1_000_000, tz=UTC)
    period = periods.period_of(target.reset, changed_at)
    old = record.old if record.old is not None else Decimal(0)
    refused = refusal(target, limits, old, record.new)
    if refused is not None:
        log.warning(
            "%s's change on %s is not rolled up into %s: %s",
            record.member_id,
            record.board_id,
            target_id,
            refused,
        )
        return  # the same judgment on redelivery: nothing to remember
    # The target member is hidden only if hidden on the target (its own score item says,
    # or for its first score of a period its profile there: ``write_score``).
    first_hidden = False
    for _ in retry.attempts():
        applied, state = members.rollup_state(target_id, record.member_id, period, mark)
        if applied:
            return
        if not takes(target, state, record.written_us):
            return  # older than a change the target took: ignored, again on redelivery
        now = clock()
        new_score = _bounded(rolled_up(target, state.score if state else None, old, record.new))
        reached = int(now.timestamp() * 1_000_000)
        new_state = _next_state(target, state, new_score, reached, record.written_us, first_hidden)
        if new_state is None:
            return  # nothing changes; doing nothing again on redelivery is the same
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
            if deleted_at(target_id, record.member_id) is not None:
                log.info(
                    "%s was deleted from %s: its change on %s is not rolled up",
                    record.member_id,
                    target_id,
                    record.board_id,
                )
                return
            data = members.get_data(record.board_id, [record.member_id])[record.member_id]
            score = (replace(new_state, hidden=False), placement)  # a new member is not hidden
            if members.create_member(target_id, record.member_id, data, score, period, now, mark=mark):
                return
        except VersionConflict:
            continue
    raise Contended(f"could not roll {record.member_id} up into {target_id}: too much contention")


def refusal(target: BoardSettings, limits: Limits, old: Decimal, new: Decimal) -> str | None:
    """Why the target's value limits refuse the source's change from ``old`` to ``new``
    (None: they take it): an ``increment`` target bounds the change, as it bounds a
    submission's value, the others the score they are offered."""
    value = numbers.EXACT.subtract(new, old) if target.operator == "increment" else new
    try:
        within_limits(value, limits, "the change" if target.operator == "increment" else "the score")
    except ValidationError as error:
        return error.message
    return None


def takes(target: BoardSettings, state: ScoreState | None, moment_us: int) -> bool:
    """Whether the target member takes a source change made at ``moment_us``. A ``set``
    target takes only a change made after the latest one it took, from any of its sources
    (a change at the very same microsecond as that one: the one taken first stays); the
    other operators take every change, once."""
    if target.operator != "set" or state is None:
        return True
    return moment_us > state.rolled_up_us


def _next_state(
    target: BoardSettings,
    state: ScoreState | None,
    new_score: Decimal,
    reached_us: int,
    moment_us: int,
    first_hidden: bool,
) -> ScoreState | None:
    """The target member's state after the change; None when nothing changes. A ``set``
    target remembers the change's moment even when its score stays: a change read later
    that was made before this one must not be taken over it."""
    remembers = target.operator == "set"
    if state is None:
        first = ScoreState.first(new_score, reached_us, first_hidden)
        return replace(first, rolled_up_us=moment_us) if remembers else first
    if new_score == state.score and not remembers:
        return None
    written = state.then(new_score, reached_us)
    return replace(written, rolled_up_us=moment_us) if remembers else written


def _bounded(score: Decimal) -> Decimal:
    try:
        return numbers.check_score(score, "score")
    except ValidationError as error:
        # A poison record: the stream retries it, then parks it in the on-failure queue.
        raise ValueError(f"the rolled-up score leaves the bounds: {error.message}") from error
