"""The aggregating stream consumer: each board's ``memberCount``, rollups, and the head
and score buckets that make top-k and rank cheap (``podium.upkeep``).

One consumer does both because DynamoDB Streams serves at most two readers per shard
without throttling; the notifier is the other. Every effect is applied at most once,
keyed by the stream record's own event id, so a redelivered record or a retried batch
never counts or rolls up twice.

Rollups follow the change-feed pattern of the reference architecture: a client writes
one board, and the stream carries each change of a member's score to every board in
the source's ``rollupTo``: an ``increment`` target adds the change (new minus old), a
``best`` target is offered the new score, a ``set`` target takes it. A new source member
is a change from 0 and is created in the target, with the source's data.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from podium import numbers, periods
from podium.changes import ScoreRecord, keys_of, score_record
from podium.errors import ValidationError
from podium.keys import ALL_TIME
from podium.models import BoardSettings, ScoreState
from podium.store import AlreadyApplied, ItemMissing, Store, VersionConflict, parse_member_pk
from podium.upkeep import Upkeep

SettingsOf = Callable[[str], BoardSettings]
Clock = Callable[[], datetime]

MAX_ATTEMPTS = 64


@dataclass(frozen=True)
class CountChange:
    board_id: str
    delta: int
    period: str = ALL_TIME


def count_change(event_name: str, pk: str, sk: str) -> CountChange | None:
    """A member joins a board with the INSERT of its MEMBER item and leaves with its
    REMOVE; it joins a period of a time-windowed board with its first score there."""
    if not pk.startswith("M#") or event_name not in ("INSERT", "REMOVE"):
        return None
    delta = 1 if event_name == "INSERT" else -1
    board_id, _ = parse_member_pk(pk)
    if sk == "MEMBER":
        return CountChange(board_id, delta)
    if sk.startswith("SCORE#") and sk != f"SCORE#{ALL_TIME}":
        return CountChange(board_id, delta, sk.split("#", 1)[1])
    return None


def rolled_up(target: BoardSettings, current: Decimal | None, old: Decimal, new: Decimal) -> Decimal:
    """The target member's score after the source's change from ``old`` to ``new``."""
    if target.operator == "increment":
        return numbers.add(current or Decimal(0), numbers.EXACT.subtract(new, old))
    if target.operator == "best" and current is not None:
        return new if target.is_better(new, current) else current
    return new


class Aggregator:
    def __init__(self, store: Store, settings_of: SettingsOf, clock: Clock) -> None:
        self.store = store
        self.settings_of = settings_of
        self.clock = clock
        self.upkeep = Upkeep(store, settings_of, clock)

    def apply(self, record: dict[str, Any]) -> None:
        pk, sk = keys_of(record)
        change = count_change(str(record.get("eventName")), pk, sk)
        if change is not None:
            expires = None
            if change.period != ALL_TIME:
                board = self.settings_of(change.board_id)
                expires = periods.expires_at(board.reset, change.period, board.retain_periods)
            self.store.apply_member_count(
                str(record["eventID"]), change.board_id, change.delta, change.period, expires
            )
        score = score_record(record)
        if score is None:
            return
        self.upkeep.keep_buckets(score)
        if score.new is not None and (score.changed or score.event_name == "INSERT"):
            for target in self.settings_of(score.board_id).rollup_to:
                self.roll_up(score, target)

    def keep_heads(self, records: list[dict[str, Any]]) -> set[str]:
        """Per batch: the heads of the boards whose scores the batch changes; the
        eventIDs of the records whose head could not be written."""
        changes = [change for change in map(score_record, records) if change is not None]
        return self.upkeep.keep_heads(changes)

    def roll_up(self, record: ScoreRecord, target_id: str) -> None:
        assert record.new is not None
        mark = f"ROLLUP#{target_id}#{record.event_id}"
        target = self.settings_of(target_id)
        # The target's period is the one the change happened in (the same on redelivery).
        changed_at = datetime.fromtimestamp(record.changed_us / 1_000_000, tz=UTC)
        period = periods.period_of(target.reset, changed_at)
        old = record.old if record.old is not None else Decimal(0)
        for attempt in range(MAX_ATTEMPTS):
            applied, state = self.store.rollup_state(target_id, record.member_id, period, mark)
            if applied:
                return
            now = self.clock()
            new_score = _bounded(rolled_up(target, state.score if state else None, old, record.new))
            reached = int(now.timestamp() * 1_000_000)
            if state is not None and new_score == state.score:
                return  # nothing changes; doing nothing again on redelivery is the same
            version = state.version if state else None
            new_state = state.then(new_score, reached) if state else ScoreState.first(new_score, reached)
            try:
                self.store.write_score(
                    target_id, target, record.member_id, version, new_state, period, mark=mark
                )
                return
            except AlreadyApplied:
                return
            except ItemMissing:  # the member first appears in the target: with the source's data
                data = self.store.get_data(record.board_id, [record.member_id])[record.member_id]
                if self.store.create_member(
                    target_id, target, record.member_id, data, new_state, period, now, mark=mark
                ):
                    return
            except VersionConflict:
                time.sleep(random.uniform(0, min(0.05, 0.002 * 2**attempt)))
        raise RuntimeError(f"could not roll {record.member_id} up into {target_id}: too much contention")


def _bounded(score: Decimal) -> Decimal:
    try:
        return numbers.check_score(score, "score")
    except ValidationError as error:
        # A poison record: the stream retries it, then parks it in the on-failure queue.
        raise ValueError(f"the rolled-up score leaves the bounds: {error.message}") from error
