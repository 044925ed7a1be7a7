"""Hot counters: the insert-only event log, and fresh reads (its fold is the stream's:
``podium.stream.fold``).

Following the log-and-snapshot pattern: writes to a hot counter are inserts only; a fold
(fed by the change stream) turns the logged events into scores; a fresh read is the last
fold plus the events logged since.

* **Ingest** writes a request's events as one *page* per member (all of a request's pages in
  one transaction) and claims each client ``eventId`` for 24 hours, per member of the
  board: the first request to claim an id holds it, and a later event of the member that
  reuses it is not counted. When the claims fit in the pages' transaction they go in it,
  and the pages are written claimed: their events' sum and number less those reusing an id.
  Else the pages are written first, the ids claimed after, and each page then *settled*:
  replaced by its claimed form. Pages of events without ids are claimed as written.
* **Fold**, per member and batch of stream records: the pages as the log holds them now
  (a page still being claimed - its request failed or is slow - has its ids claimed by the
  fold, for its request, as ingest would), then one transaction adds their sum to the
  member's score and removes the pages. A page is counted exactly when it is removed, and it
  is removed with the score: a retried or bisected batch finds it gone.
* **Fresh read**: the folded score plus the member's claimed pages, read between two reads
  of the score item's version (a fold that commits meanwhile is never counted twice). It
  reads one small page per request and member, not an item per event, within the bound of
  a request (``podium.cost``): pages past what the bound lets it read are answered 409, to
  be read again once the fold has caught up (within seconds).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from podium import cost, periods, retry
from podium.errors import Conflict, ValidationError
from podium.models import BoardSettings, EventPage, ScoreState
from podium.ports import EventStore, MemberStore

if TYPE_CHECKING:  # the consumer that folds the log parses no request
    from podium.validation import EventRequest

ID_WINDOW_SECONDS = 24 * 3600
LOG_TTL_SECONDS = 3 * 24 * 3600  # a safety net: folded pages are deleted at once
LOG_PARTITIONS = 16  # the partitions a member's pages spread over (the store's EVENT_BUCKETS)
# A claimed page's names, sum (up to 38 digits), count, period, ttl, sort key (its request
# id), and its bucket and LogIndex key, besides its board id (twice) and member id.
PAGE_FIXED_BYTES = 160
FRESH_TRIES = 8


def to_pages(
    board_id: str, settings: BoardSettings, events: Sequence[EventRequest], now: datetime
) -> list[EventPage]:
    """The pages to insert for a request's events, one per member, in the order the members
    first appear: a repeated eventId of a member within the request is not counted again (it
    is accepted, and dropped here). A page without ids is claimed as it is written."""
    if settings.operator != "increment":
        raise ValidationError(
            f"board {board_id} has operator {settings.operator}: only increment boards take events"
        )
    period = periods.period_of(settings.reset, now)
    request = uuid.uuid4().hex
    grouped: dict[str, list[tuple[str | None, Decimal]]] = {}
    seen: set[tuple[str, str]] = set()
    for event in events:
        if event.event_id is not None:
            if (event.member_id, event.event_id) in seen:
                continue
            seen.add((event.member_id, event.event_id))
        grouped.setdefault(event.member_id, []).append((event.event_id, event.value))
    pages = []
    for member_id, logged in grouped.items():
        claimed = all(event_id is None for event_id, _ in logged)
        total = sum((value for _, value in logged), Decimal(0))
        pages.append(
            EventPage(
                board_id=board_id,
                member_id=member_id,
                period=period,
                request=request,
                claimed=claimed,
                total=total,
                count=len(logged),
                events=() if claimed else tuple(logged),
            )
        )
    return pages


def ids_to_claim(pages: Sequence[EventPage]) -> list[tuple[str, str]]:
    """(memberId, eventId) of each event with an id in the pages being claimed."""
    return [
        (page.member_id, event_id) for page in pages for event_id, _ in page.events if event_id is not None
    ]


def settled(page: EventPage, held: set[tuple[str, str]]) -> EventPage:
    """A page being claimed, in its claimed form: the events without an id and those whose id
    its request holds (``held``); an event reusing an id another request holds is dropped."""
    kept = [
        value for event_id, value in page.events if event_id is None or (page.member_id, event_id) in held
    ]
    return replace(page, claimed=True, total=sum(kept, Decimal(0)), count=len(kept), events=())


TRANSACTION_ACTIONS = 100
LOG_ROUNDS = 8  # transactions of a request's pages and claims: each round drops the ids found taken


def log(eventlog: EventStore, pages: Sequence[EventPage], now: datetime, expires: int) -> bool:
    """Log a request's pages. When its pages and the claims of its ids fit in one transaction,
    write them together, the pages claimed already (an id found taken is left out, and the
    transaction sent again): True. Else log the pages as they are, all or none, and return
    False: the caller claims their ids and settles them (``claim``, ``settle_pages``)."""
    claiming = [page for page in pages if not page.claimed]
    claims = ids_to_claim(claiming)
    if not claims or len(claims) + len(pages) > TRANSACTION_ACTIONS:
        eventlog.log_pages(pages, expires)
        return not claiming
    board_id, request = pages[0].board_id, pages[0].request
    taken: set[tuple[str, str]] = set()
    for _ in range(LOG_ROUNDS):
        held = set(claims) - taken
        final = [page if page.claimed else settled(page, held) for page in pages]
        lost = eventlog.log_claimed_pages(
            board_id,
            [page for page in final if page.count],
            [pair for pair in claims if pair in held],
            request,
            int(now.timestamp()) + ID_WINDOW_SECONDS,
            int(now.timestamp()),
            expires,
        )
        if lost is None:
            return True
        taken |= lost
    raise retry.contended("the events' ids")  # other requests kept claiming them: 429


def claim(
    eventlog: EventStore,
    pages: Sequence[EventPage],
    now: datetime,
    known: tuple[set[tuple[str, str]], list[tuple[str, str]]] | None = None,
) -> list[EventPage]:
    """Claim the ids of the pages being claimed (all of one request) for their request, and
    give each page's claimed form; claimed pages are given as they are. ``known``: the claims
    as read already (``EventStore.read_claims``: held by the request, held by no one), so
    that only the free ones are written (the fold, which finds most written by the request)."""
    claiming = [page for page in pages if not page.claimed]
    if not claiming:
        return list(pages)
    first = claiming[0]
    held_before, free = known if known is not None else (set(), ids_to_claim(claiming))
    held = held_before | eventlog.claim_ids(
        first.board_id,
        free,
        first.request,
        int(now.timestamp()) + ID_WINDOW_SECONDS,
        int(now.timestamp()),
    )
    return [page if page.claimed else settled(page, held) for page in pages]


def fresh_score(
    members: MemberStore,
    eventlog: EventStore,
    board_id: str,
    member_id: str,
    period: str,
    budget: float | None = None,
) -> tuple[ScoreState | None, Decimal, int]:
    """The folded score, the sum of the member's distinct events not yet folded, and their
    number: the claimed pages (one query per partition of the log), between two reads of the
    score (a fold that commits meanwhile is read again), within ``budget`` read units
    (``cost.READ_BOUND`` unless given): Conflict when the pages waiting are more than that can
    read. A page still being claimed belongs to a request that has not answered yet (or
    failed): its events count once claimed, or once folded."""
    budget = cost.READ_BOUND if budget is None else budget
    spent = 0.0
    for _ in range(FRESH_TRIES):
        if budget - spent - 2 - LOG_PARTITIONS < 0:
            break
        most = pages_per_partition(board_id, member_id, budget - spent)
        before = members.get_score(board_id, member_id, period)
        pages, sizes, whole = eventlog.claimed_pages(board_id, member_id, most)
        spent += 2 + sum(cost.units(size, consistent=True) for size in sizes)
        if not whole:
            raise too_many(member_id, sum(page.count for page in pages))
        pending = [page for page in pages if page.period == period]
        after = members.get_score(board_id, member_id, period)
        if (before and before.version) == (after and after.version):
            total = sum((page.total for page in pending), Decimal(0))
            return after, total, sum(page.count for page in pending)
    raise Conflict(f"{member_id} is being folded too often to read fresh; retry")


def pages_per_partition(board_id: str, member_id: str, budget: float) -> int:
    """How many claimed pages a fresh read may read in each partition of the member's log
    within ``budget`` read units: a try reads the score twice and each partition once, at
    one read unit at least each, and a page is at most ``PAGE_FIXED_BYTES`` and its ids."""
    room = budget - 2 - LOG_PARTITIONS
    largest = PAGE_FIXED_BYTES + 2 * len(board_id) + len(member_id)
    return max(1, int((1 + room / LOG_PARTITIONS) * cost.BLOCK_BYTES // largest))


def too_many(member_id: str, read: int) -> Conflict:
    return Conflict(
        f"{member_id} has more events waiting to be folded than one fresh read may count "
        f"({read} read of them); the fold counts them within seconds: retry shortly, or read "
        "without fresh"
    )
