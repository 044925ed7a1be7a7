"""Hot counters: the insert-only event log, and fresh reads (its fold is the stream's:
``podium.stream.fold``).

Following the log-and-snapshot pattern: writes to a hot counter are inserts only; a fold
(fed by the change stream) turns the logged events into scores; a fresh read is the last
fold plus the events logged since.

* **Ingest** inserts each event as its own item, under one of ``EVENT_BUCKETS`` partition
  keys of its member, all of a request in one transaction, and reads nothing.
* **Fold**, per member and batch of stream records: each client ``eventId`` is claimed
  once per board for 24 hours (a later event reusing it is not counted); the events are
  marked with the fold's id; then one transaction adds their sum to the member's score
  together with the fold's commit mark; then the events are deleted. So the member's item
  takes one write per batch, and each event is counted exactly once: a retried or bisected
  batch finds its events committed (skip) or held by a fold that never committed (take
  over - a stream shard is processed by one invocation at a time).
* **Fresh read**: the folded score plus the member's events still in the log, less those
  of committed folds or reusing a claimed id; the score item's version is read before and
  after, so a fold that commits meanwhile is never counted twice. It reads in proportion to
  the events not folded yet, so it keeps to the bound of a request (``podium.cost``): a
  member with more than that bound lets it read (some 3,000 events without ids, some 400
  with: each id's claim is one more read) is answered 409, to be read again once the fold
  has caught up (within seconds), rather than read at any cost.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from podium import cost, periods
from podium.errors import Conflict, ValidationError
from podium.models import BoardSettings, LoggedEvent, ScoreState
from podium.ports import EventStore, MemberStore

if TYPE_CHECKING:  # the consumer that folds the log parses no request
    from podium.validation import EventRequest

ID_WINDOW_SECONDS = 24 * 3600
LOG_TTL_SECONDS = 3 * 24 * 3600  # a safety net: folded events are deleted at once
LOG_PARTITIONS = 64  # the partitions a member's events spread over (the store's EVENT_BUCKETS)
MAX_EVENT_ID = 128
# A logged event's names, value, insertion id, period, ttl and fold id, besides its board and
# member ids and (twice: its key and its own attribute) its event id.
EVENT_FIXED_BYTES = 150
FRESH_TRIES = 8


def to_log(
    board_id: str, settings: BoardSettings, events: Sequence[EventRequest], now: datetime
) -> list[LoggedEvent]:
    """The items to insert for a request's events: a repeated eventId within the request
    is not counted again (it is accepted, and dropped here)."""
    if settings.operator != "increment":
        raise ValidationError(
            f"board {board_id} has operator {settings.operator}: only increment boards take events"
        )
    period = periods.period_of(settings.reset, now)
    request = uuid.uuid4().hex
    seen: set[str] = set()
    logged = []
    for index, event in enumerate(events):
        if event.event_id is not None:
            if event.event_id in seen:
                continue
            seen.add(event.event_id)
            key = f"i:{event.event_id}"
        else:
            key = f"g:{uuid.uuid4().hex}"
        logged.append(
            LoggedEvent(
                board_id=board_id,
                member_id=event.member_id,
                period=period,
                key=key,
                value=event.value,
                insertion=f"{request}:{index}",
                event_id=event.event_id,
            )
        )
    return logged


def fresh_score(
    members: MemberStore,
    eventlog: EventStore,
    board_id: str,
    member_id: str,
    period: str,
    budget: float | None = None,
) -> tuple[ScoreState | None, Decimal, int]:
    """The folded score, the sum of the member's distinct events not yet folded, and their
    number; reads in proportion to those events (one query per partition of the log, then
    the marks of the folds and the claims of the ids they name), within ``budget`` read
    units (``cost.READ_BOUND`` unless given): Conflict when the events waiting are more than
    that can read."""
    budget = cost.READ_BOUND if budget is None else budget
    spent = 0.0
    largest = EVENT_FIXED_BYTES + len(board_id) + len(member_id) + 2 * MAX_EVENT_ID
    for _ in range(FRESH_TRIES):
        # A try reads the score twice and each partition once, at one read unit at least each.
        room = budget - spent - 2 - LOG_PARTITIONS
        if room < 0:
            break
        most = max(1, int((1 + room / LOG_PARTITIONS) * cost.BLOCK_BYTES // largest))
        before = members.get_score(board_id, member_id, period)
        logged, sizes, whole = eventlog.pending_events(board_id, member_id, most)
        spent += 2 + sum(cost.units(size, consistent=True) for size in sizes)
        if not whole:
            raise too_many(member_id, len(logged))
        pending = [e for e in logged if e.period == period]
        folds = {e.fold for e in pending if e.fold}
        ids = {e.event_id for e in pending if e.event_id}
        if spent + len(folds) + len(ids) > budget:  # a consistent read of each, one unit at least
            raise too_many(member_id, len(pending))
        committed = eventlog.committed_folds(board_id, member_id, folds) if folds else set()
        pending = [e for e in pending if e.fold not in committed]
        claims = eventlog.id_claims(board_id, {e.event_id for e in pending if e.event_id}) if ids else {}
        spent += len(folds) + len(ids)
        pending = [
            e for e in pending if e.event_id is None or claims.get(e.event_id, e.insertion) == e.insertion
        ]
        after = members.get_score(board_id, member_id, period)
        if (before and before.version) == (after and after.version):
            return after, sum((e.value for e in pending), Decimal(0)), len(pending)
    raise Conflict(f"{member_id} is being folded too often to read fresh; retry")


def too_many(member_id: str, read: int) -> Conflict:
    return Conflict(
        f"{member_id} has more events waiting to be folded than one fresh read may count "
        f"({read} read of them); the fold counts them within seconds: retry shortly, or read "
        "without fresh"
    )
