"""The fold of the event log (``podium.events``), per member and batch of stream records: the
member's pages as the log holds them now (a page still being claimed has its ids claimed by
the fold, for its request, as ingest would have), then one transaction adds their sum to the
member's score and removes the pages. So the member's item takes one write per batch (per
90 pages), the events take none of their own, and each page is counted exactly once: it is
counted exactly when it is removed, in the transaction that writes the score, so a retried
or bisected batch finds it gone (and a fold racing another, or racing the request that
settles the page, finds its removal refused and reads the page again)."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from datetime import datetime
from decimal import Decimal
from functools import cache

from podium import events, keys, numbers, retry
from podium.dal import codecs
from podium.errors import AlreadyApplied, Conflict, HiddenChanged, ItemMissing, VersionConflict
from podium.models import BoardSettings, EventPage, ScoreState
from podium.ports import EventStore, MemberStore
from podium.stream.records import Record, is_event_insert, keys_of

log = logging.getLogger(__name__)

# Pages removed with one score write: with the score's put and the check of the member, within
# a transaction's 100 actions.
COMMIT_PAGES = 90
# How often a member's fold reads its pages again after a removal was refused (another fold
# took a page, or its request settled it meanwhile).
REREADS = 8

MEMBERS_AT_ONCE = 16  # members of a batch folded at once

SettingsOf = Callable[[str], BoardSettings]


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=MEMBERS_AT_ONCE, thread_name_prefix="podium-fold")


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
        """Fold the batch's logged pages; return the eventIDs of the records whose fold
        failed (the stream retries from the first of them)."""
        groups: dict[tuple[str, str], dict[str, tuple[list[str], EventPage]]] = defaultdict(dict)
        for record in records:
            if is_event_insert(record):
                pk, _ = keys_of(record)
                page = codecs.page_from_image(pk, record["dynamodb"]["NewImage"])
                # a page's two forms are one page: its records fold together
                ids, _ = groups[(page.board_id, page.member_id)].setdefault(page.request, ([], page))
                ids.append(str(record["eventID"]))

        def fold_one(group: tuple[tuple[str, str], dict[str, tuple[list[str], EventPage]]]) -> list[str]:
            (board_id, member_id), pages = group
            try:
                self.fold_member(board_id, member_id, [page for _, page in pages.values()])
            except Exception:
                log.exception("folding %d pages of %s on %s failed", len(pages), member_id, board_id)
                return [record_id for ids, _ in pages.values() for record_id in ids]
            return []

        # The members at once, each on a thread of the fold's own pool: a member's fold fans
        # out on the main pool (its batched reads), which this must not wait for a place in.
        items = list(groups.items())
        if len(items) <= 1:
            return {record_id for group in items for record_id in fold_one(group)}
        futures = [_pool().submit(copy_context().run, fold_one, group) for group in items]
        return {record_id for future in futures for record_id in future.result()}

    def fold_member(self, board_id: str, member_id: str, pages: list[EventPage]) -> None:
        """Fold the member's pages that are still in the log, in the form they have now."""
        for _ in range(REREADS):
            now = self.eventlog.pages_now(pages)
            if not now:
                return  # all folded before: a redelivery
            claiming = [page for page in now if not page.claimed]
            pairs = [(page, page) for page in now if page.claimed]
            for request in {page.request for page in claiming}:
                # a request that failed or is slow: claim its ids for it, as it would have
                of_request = [page for page in claiming if page.request == request]
                # the request has mostly claimed them itself by now: read before writing
                now_s = int(self.clock().timestamp())
                known = self.eventlog.read_claims(board_id, events.ids_to_claim(of_request), request, now_s)
                settled = events.claim(self.eventlog, of_request, self.clock(), known)
                pairs += list(zip(of_request, settled, strict=True))
            try:
                self._apply(board_id, member_id, pairs)
                return
            except AlreadyApplied:
                continue  # a page changed meanwhile: read them again
        raise Conflict(f"could not fold events into {member_id}: its pages kept changing")

    def _apply(self, board_id: str, member_id: str, pages: list[tuple[EventPage, EventPage]]) -> None:
        """Remove each page (as the log holds it, beside its claimed form: what it counts) and
        add its claimed sum to the score of its period; pages that count nothing are only
        removed."""
        empty = [page for page, settled in pages if settled.count == 0]
        if empty:
            self.eventlog.delete_pages(empty)
        by_period: dict[str, list[tuple[EventPage, EventPage]]] = defaultdict(list)
        for page, settled in pages:
            if settled.count:
                by_period[page.period].append((page, settled))
        for period, counted in by_period.items():
            for start in range(0, len(counted), COMMIT_PAGES):
                self._commit(board_id, member_id, period, counted[start : start + COMMIT_PAGES])

    def _commit(
        self, board_id: str, member_id: str, period: str, pages: Sequence[tuple[EventPage, EventPage]]
    ) -> None:
        settings = self.settings_of(board_id)
        total = sum((settled.total for _, settled in pages), Decimal(0))
        consumed = [page for page, _ in pages]
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
            try:
                self.members.write_score(
                    board_id,
                    member_id,
                    state.version if state else None,
                    new_state,
                    placement,
                    period,
                    also=self.eventlog.page_removals(consumed),
                )
                return
            except ItemMissing:
                # No such member when the events are folded: they are dropped, and counted.
                count = sum(settled.count for _, settled in pages)
                if not self.eventlog.count_dropped(board_id, consumed, count):
                    raise AlreadyApplied(f"pages of events of {member_id}") from None
                return
            except HiddenChanged as changed:
                first_hidden = changed.hidden
            except VersionConflict:
                continue
        raise Conflict(f"could not fold events into {member_id}: too much contention")
