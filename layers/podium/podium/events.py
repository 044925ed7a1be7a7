"""Hot counters: the insert-only event log, its fold, and fresh reads.

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
  after, so a fold that commits meanwhile is never counted twice.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from podium import numbers, periods
from podium.changes import keys_of
from podium.errors import Conflict, ValidationError
from podium.models import BoardSettings, LoggedEvent, ScoreState
from podium.store import ItemMissing, Store, VersionConflict, event_from_image, member_pk
from podium.validation import EventRequest

log = logging.getLogger(__name__)

ID_WINDOW_SECONDS = 24 * 3600
LOG_TTL_SECONDS = 3 * 24 * 3600  # a safety net: folded events are deleted at once
MAX_ATTEMPTS = 64
CLAIM_CHUNK = 50  # two actions an event, within a transaction's 100

SettingsOf = Callable[[str], BoardSettings]
Clock = Callable[[], datetime]


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


def is_event_insert(record: dict[str, Any]) -> bool:
    pk, _ = keys_of(record)
    return pk.startswith("P#") and record.get("eventName") == "INSERT"


class Folder:
    def __init__(self, store: Store, settings_of: SettingsOf, clock: Clock) -> None:
        self.store = store
        self.settings_of = settings_of
        self.clock = clock

    def fold(self, records: Sequence[dict[str, Any]]) -> set[str]:
        """Fold the batch's logged events; return the eventIDs of the records whose fold
        failed (the stream retries from the first of them)."""
        groups: dict[tuple[str, str, str], list[tuple[str, LoggedEvent]]] = defaultdict(list)
        for record in records:
            if is_event_insert(record):
                pk, _ = keys_of(record)
                event = event_from_image(pk, record["dynamodb"]["NewImage"])
                groups[(event.board_id, event.member_id, event.period)].append(
                    (str(record["eventID"]), event)
                )
        failed: set[str] = set()
        for (board_id, member_id, period), group in groups.items():
            try:
                self.fold_member(board_id, member_id, period, [event for _, event in group])
            except Exception:
                log.exception("folding %d events of %s on %s failed", len(group), member_id, board_id)
                failed.update(record_id for record_id, _ in group)
        return failed

    def fold_member(self, board_id: str, member_id: str, period: str, events: list[LoggedEvent]) -> None:
        fold = uuid.uuid4().hex
        owner = member_pk(board_id, member_id)
        expires = int(time.time()) + ID_WINDOW_SECONDS
        # Read the log first (one batched read): redelivered events already folded and
        # deleted are skipped, and a re-send that replaced an item is folded as it is now.
        now = self.store.logged_now(events)
        present = [now[e.key] for e in events if e.key in now]
        committed = self.store.committed_folds(owner, {e.fold for e in present if e.fold})
        done = [e for e in present if e.fold in committed]
        open_ = [e for e in present if e.fold not in committed]

        def claim_one(event: LoggedEvent) -> str:
            outcome, insertion = self.store.claim_for_fold(event, fold, owner)
            # The first insert of an id claims it (a retry of that insert claims it again);
            # a later insert that reuses it is a duplicate and is not counted.
            if (
                outcome == "mine"
                and event.event_id is not None
                and not self.store.claim_event_id(board_id, event.event_id, insertion, expires)
            ):
                return "duplicate"
            return outcome

        def claim(chunk: list[LoggedEvent]) -> list[str]:
            """Claim a chunk in one transaction; split it when that fails, down to the
            events that need a closer look (a duplicate id, an abandoned fold)."""
            ids = [e.event_id for e in chunk if e.event_id]
            simple = all(e.fold is None for e in chunk) and len(set(ids)) == len(ids)
            if simple and self.store.claim_many_for_fold(board_id, chunk, fold, expires):
                return ["mine"] * len(chunk)
            if len(chunk) == 1:
                return [claim_one(chunk[0])]
            middle = len(chunk) // 2
            return claim(chunk[:middle]) + claim(chunk[middle:])

        chunks = [open_[i : i + CLAIM_CHUNK] for i in range(0, len(open_), CLAIM_CHUNK)]
        outcomes = [outcome for chunk in self.store.gather(claim, chunks) for outcome in chunk]
        mine = [e for e, outcome in zip(open_, outcomes, strict=True) if outcome == "mine"]
        done += [e for e, outcome in zip(open_, outcomes, strict=True) if outcome in ("folded", "duplicate")]
        if mine:
            self._commit(board_id, member_id, period, mine, fold, owner)
        self.store.delete_events(mine + done)

    def _commit(
        self, board_id: str, member_id: str, period: str, events: list[LoggedEvent], fold: str, owner: str
    ) -> None:
        settings = self.settings_of(board_id)
        total = sum((e.value for e in events), Decimal(0))
        for attempt in range(MAX_ATTEMPTS):
            state = self.store.get_score(board_id, member_id, period)
            new_score = numbers.check_score(numbers.add(state.score if state else Decimal(0), total), "score")
            version = state.version if state else None
            # An unchanged score does not move the member (``ScoreState.then``).
            reached = int(self.clock().timestamp() * 1_000_000)
            new_state = state.then(new_score, reached) if state else ScoreState.first(new_score, reached)
            try:
                self.store.write_score(
                    board_id,
                    settings,
                    member_id,
                    version,
                    new_state,
                    period,
                    mark=f"FOLD#{owner}#{fold}",
                )
                return
            except ItemMissing:
                # No such member when the events are folded: they are dropped, and counted.
                self.store.count_dropped(board_id, owner, fold, len(events))
                return
            except VersionConflict:
                time.sleep(random.uniform(0, min(0.05, 0.002 * 2**attempt)))
        raise Conflict(f"could not fold events into {member_id}: too much contention")


def fresh_score(
    store: Store, board_id: str, member_id: str, period: str
) -> tuple[ScoreState | None, Decimal, int]:
    """The folded score, the sum of the member's distinct events not yet folded, and their
    number; reads in proportion to those events (one query per bucket)."""
    owner = member_pk(board_id, member_id)
    for _ in range(8):
        before = store.get_score(board_id, member_id, period)
        pending = [e for e in store.pending_events(board_id, member_id) if e.period == period]
        committed = store.committed_folds(owner, {e.fold for e in pending if e.fold})
        pending = [e for e in pending if e.fold not in committed]
        claims = store.id_claims(board_id, {e.event_id for e in pending if e.event_id})
        pending = [
            e for e in pending if e.event_id is None or claims.get(e.event_id, e.insertion) == e.insertion
        ]
        after = store.get_score(board_id, member_id, period)
        if (before and before.version) == (after and after.version):
            return after, sum((e.value for e in pending), Decimal(0)), len(pending)
    raise Conflict(f"{member_id} is being folded too often to read fresh; retry")
