"""The fold of the event log (``podium.events``), per batch of stream records: each
client ``eventId`` is claimed once per board for 24 hours (a later event reusing it is not
counted); the events are marked with the fold's id; then one transaction adds their sum to
the member's score together with the fold's commit mark; then the events are deleted. So
the member's item takes one write per batch, and each event is counted exactly once: a
retried or bisected batch finds its events committed (skip) or held by a fold that never
committed (take over - a stream shard is processed by one invocation at a time)."""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal

from podium import fanout, keys, numbers, retry
from podium.dal import codecs, schema
from podium.errors import Conflict, HiddenChanged, ItemMissing, VersionConflict
from podium.events import ID_WINDOW_SECONDS
from podium.models import BoardSettings, LoggedEvent, ScoreState
from podium.ports import EventStore, MemberStore
from podium.stream.records import Record, is_event_insert, keys_of

log = logging.getLogger(__name__)

CLAIM_CHUNK = 50  # two actions an event, within a transaction's 100

SettingsOf = Callable[[str], BoardSettings]
Clock = Callable[[], datetime]


class Folder:
    def __init__(
        self, members: MemberStore, eventlog: EventStore, settings_of: SettingsOf, clock: Clock
    ) -> None:
        self.members = members
        self.eventlog = eventlog
        self.settings_of = settings_of
        self.clock = clock

    def fold(self, records: Sequence[Record]) -> set[str]:
        """Fold the batch's logged events; return the eventIDs of the records whose fold
        failed (the stream retries from the first of them)."""
        groups: dict[tuple[str, str, str], list[tuple[str, LoggedEvent]]] = defaultdict(list)
        for record in records:
            if is_event_insert(record):
                pk, _ = keys_of(record)
                event = codecs.event_from_image(pk, record["dynamodb"]["NewImage"])
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
        expires = int(time.time()) + ID_WINDOW_SECONDS
        # Read the log first (one batched read): redelivered events already folded and
        # deleted are skipped, and a re-send that replaced an item is folded as it is now.
        now = self.eventlog.logged_now(events)
        present = [now[e.key] for e in events if e.key in now]
        committed = self.eventlog.committed_folds(board_id, member_id, {e.fold for e in present if e.fold})
        done = [e for e in present if e.fold in committed]
        open_ = [e for e in present if e.fold not in committed]

        def claim_one(event: LoggedEvent) -> str:
            outcome, insertion = self.eventlog.claim_for_fold(event, fold)
            # The first insert of an id claims it (a retry of that insert claims it again);
            # a later insert that reuses it is a duplicate and is not counted.
            if (
                outcome == "mine"
                and event.event_id is not None
                and not self.eventlog.claim_event_id(board_id, event.event_id, insertion, expires)
            ):
                return "duplicate"
            return outcome

        def claim(chunk: list[LoggedEvent]) -> list[str]:
            """Claim a chunk in one transaction; split it when that fails, down to the
            events that need a closer look (a duplicate id, an abandoned fold)."""
            ids = [e.event_id for e in chunk if e.event_id]
            simple = all(e.fold is None for e in chunk) and len(set(ids)) == len(ids)
            if simple and self.eventlog.claim_many_for_fold(board_id, chunk, fold, expires):
                return ["mine"] * len(chunk)
            if len(chunk) == 1:
                return [claim_one(chunk[0])]
            middle = len(chunk) // 2
            return claim(chunk[:middle]) + claim(chunk[middle:])

        chunks = [open_[i : i + CLAIM_CHUNK] for i in range(0, len(open_), CLAIM_CHUNK)]
        outcomes = [outcome for chunk in fanout.gather(claim, chunks) for outcome in chunk]
        mine = [e for e, outcome in zip(open_, outcomes, strict=True) if outcome == "mine"]
        done += [e for e, outcome in zip(open_, outcomes, strict=True) if outcome in ("folded", "duplicate")]
        if mine:
            self._commit(board_id, member_id, period, mine, fold)
        self.eventlog.delete_events(mine + done)

    def _commit(
        self, board_id: str, member_id: str, period: str, events: list[LoggedEvent], fold: str
    ) -> None:
        settings = self.settings_of(board_id)
        total = sum((e.value for e in events), Decimal(0))
        first_hidden = False  # a hidden member's first score of a period: the profile says
        for _ in retry.attempts():
            state = self.members.get_score(board_id, member_id, period)
            new_score = numbers.check_score(numbers.add(state.score if state else Decimal(0), total), "score")
            # An unchanged score does not move the member (``ScoreState.then``).
            reached = int(self.clock().timestamp() * 1_000_000)
            if state is not None:
                new_state = state.then(new_score, reached)
            else:
                new_state = ScoreState.first(new_score, reached, first_hidden)
            placement = keys.placement(board_id, settings, member_id, new_state, period)
            mark = schema.fold_mark(board_id, member_id, fold)
            try:
                self.members.write_score(
                    board_id, member_id, state.version if state else None, new_state, placement, period, mark
                )
                return
            except ItemMissing:
                # No such member when the events are folded: they are dropped, and counted.
                self.eventlog.count_dropped(board_id, member_id, fold, len(events))
                return
            except HiddenChanged as changed:
                first_hidden = changed.hidden
            except VersionConflict:
                continue
        raise Conflict(f"could not fold events into {member_id}: too much contention")
