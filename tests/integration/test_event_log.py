"""The event log on DynamoDB Local: pages of events, the fold (exactly once, whatever the
stream's regrouping and redelivery), fresh reads, and their cost with 10,000 events waiting."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from podium import cost, events
from podium.dal import Database
from podium.errors import ValidationError
from podium.validation import EventRequest, board_request, events_request, member_request
from podium.wiring import Services
from tests.helpers import Metered, TableStream, TickingClock, unique_id

pytestmark = pytest.mark.integration

Record = dict[str, Any]


@pytest.fixture
def service(store: Database) -> Services:
    """The service on a clock that starts now. The log's pages and id claims carry expiry
    times (3 days, 24 hours) that DynamoDB Local enforces as DynamoDB does: written by a
    clock days behind the real one, they are expired already, and DynamoDB Local's sweep
    deleted claims under a test (an id sent again was then counted twice)."""
    return Services(store, clock=TickingClock(start=datetime.now(UTC)))


def _value(v: Any) -> Any:
    return v if v == "x" else Decimal(str(v))


def _events(*events: tuple[str, Any, str | None]) -> Any:
    body = {
        "events": [{"memberId": m, "value": _value(v), **({"eventId": e} if e else {})} for m, v, e in events]
    }
    return events_request(body)


def _log_records(table_stream: TableStream, board: str) -> list[Record]:
    return [r for r in table_stream.records() if r["dynamodb"]["Keys"]["pk"]["S"].startswith(f"P#{board}#")]


def _log_without_claiming(service: Services, board: str, requests: list[EventRequest]) -> None:
    """A request that failed after logging its pages, before claiming their ids (a crash, a
    time-out): its pages stay in the form being claimed, for the fold to claim."""
    settings_ = service.boards.settings(board)
    pages = events.to_pages(board, settings_, requests, service.boards.clock())
    service.db.eventlog.log_pages(pages, 2**31)


def test_logged_events_fold_once_and_read_fresh_before(service: Services, table_stream: TableStream) -> None:
    # Given an image with 10 views, and views logged: one id sent twice, one id that another
    # image's event has too, one for an image that does not exist
    board = unique_id("views")
    service.boards.put_board(board, board_request({"shards": Decimal(2)}))
    service.members.put_member(board, "img-1", member_request({"score": Decimal(10)}))
    service.members.put_member(board, "img-2", member_request({}))
    accepted = service.members.log_events(
        board,
        _events(("img-1", 1, "v-1"), ("img-1", 1, "v-2"), ("img-1", "0.5", None), ("img-1", 1, "v-1")),
    )
    service.members.log_events(board, _events(("img-1", 5, "v-2"), ("img-2", 7, "v-1"), ("ghost", 3, "v-9")))
    assert accepted == 4

    # When nothing is folded yet, a fresh read is the true total already: "v-2" again (with
    # another value) is not counted, img-2's "v-1" is an event of its own
    member, pending = service.members.fresh_member(board, "img-1")
    assert (member.score, pending) == (Decimal("12.5"), 3)
    assert service.members.fresh_member(board, "img-2")[0].score == 7
    assert service.members.get_member(board, "img-1").score == 10

    # When the stream delivers the log to the fold, twice
    records = _log_records(table_stream, board)
    folder = service.folder
    assert folder.fold(records) == set()
    assert folder.fold(records) == set()

    # Then each distinct event counted once; the reused id and the ghost's event did not
    assert service.members.get_member(board, "img-1").score == Decimal("12.5")
    assert service.members.get_member(board, "img-2").score == 7
    assert service.members.fresh_member(board, "img-1")[1] == 0
    assert service.boards.get_board(board).dropped_events == 1
    assert service.reads.rank(board, "img-1")["rank"] == 1


def test_a_request_that_failed_after_logging_is_claimed_by_the_fold(
    service: Services, table_stream: TableStream
) -> None:
    # Given a request whose pages were logged but whose ids were never claimed (it failed),
    # and a later request that sends one of its ids again, and claims it first
    board = unique_id("crash")
    service.boards.put_board(board, board_request({}))
    service.members.put_member(board, "img", member_request({}))
    _log_without_claiming(service, board, _events(("img", 1, "a"), ("img", 2, "b"), ("img", 4, None)))
    service.members.log_events(board, _events(("img", 8, "b"), ("img", 16, "c")))

    # Then a fresh read counts what was claimed (the failed request's events count once folded)
    assert service.members.fresh_member(board, "img")[0].score == 24

    # When the fold takes the log, and it is delivered again
    records = _log_records(table_stream, board)
    assert service.folder.fold(records) == set()
    assert service.folder.fold(records[::-1]) == set()

    # Then "b" counts once (the later request held it), everything else once
    member, pending = service.members.fresh_member(board, "img")
    assert (member.score, pending) == (Decimal(1 + 4 + 8 + 16), 0)


def test_a_request_settling_its_pages_while_the_fold_takes_them_counts_once(
    service: Services, table_stream: TableStream, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a request's pages logged, not settled yet
    board = unique_id("race")
    service.boards.put_board(board, board_request({}))
    for member in ("a", "b"):
        service.members.put_member(board, member, member_request({}))
    requests = _events(("a", 1, "x"), ("a", 2, "y"), ("b", 4, "x"))
    settings_ = service.boards.settings(board)
    pages = events.to_pages(board, settings_, requests, service.boards.clock())
    eventlog = service.db.eventlog
    eventlog.log_pages(pages, 2**31)

    # When the fold reads the pages, then the request settles them, then the fold commits
    read_pages = eventlog.pages_now
    settled_once: list[bool] = []

    def pages_then_settle(wanted: Any) -> Any:
        found = read_pages(wanted)
        if not settled_once:
            settled_once.append(True)
            eventlog.settle_pages(events.claim(eventlog, pages, service.boards.clock()), 2**31)
        return found

    monkeypatch.setattr(eventlog, "pages_now", pages_then_settle)
    records = _log_records(table_stream, board)
    assert service.folder.fold(records) == set()
    monkeypatch.undo()

    # And the request settling late, once the fold took its pages, changes nothing
    eventlog.settle_pages(events.claim(eventlog, pages, service.boards.clock()), 2**31)
    assert service.folder.fold(_log_records(table_stream, board)) == set()

    # Then each event counted once
    read, pending = service.members.fresh_member(board, "a")
    assert (read.score, pending) == (Decimal(3), 0)
    assert service.members.get_member(board, "a").score == 3
    assert service.members.get_member(board, "b").score == 4


# -- a property: any regrouping and redelivery of the stream, against a plain model --------

MEMBERS = ("a", "b", "ghost")  # "ghost" is never added: its events are dropped, and counted
IDS = ("x", "y", "z", None)

event_strategy = st.tuples(st.sampled_from(MEMBERS), st.sampled_from(IDS), st.integers(1, 9))
request_strategy = st.tuples(st.lists(event_strategy, min_size=1, max_size=6), st.booleans())


def _value_of(member: str, event_id: str | None, drawn: int) -> Decimal:
    """A client sends one value with an id (retries send the same): the value is fixed by
    the member and id; an event without an id has the value drawn."""
    if event_id is None:
        return Decimal(drawn)
    return Decimal(1 + (ord(event_id) * 7 + len(member)) % 9)


def _cuts(draw: random.Random, records: list[Record]) -> Iterator[list[Record]]:
    start = 0
    while start < len(records):
        size = draw.randint(1, max(1, len(records) // 2))
        yield records[start : start + size]
        start += size


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(requests=st.lists(request_strategy, min_size=1, max_size=6), seed=st.integers(0, 2**16))
def test_any_regrouping_and_redelivery_of_the_log_counts_each_distinct_event_once(
    service: Services,
    table_stream: TableStream,
    requests: list[tuple[list[tuple[str, str | None, int]], bool]],
    seed: int,
) -> None:
    # Given requests of events (some failing after logging, before their ids are claimed)
    board = unique_id("prop-events")
    service.boards.put_board(board, board_request({}))
    for member in MEMBERS[:2]:
        service.members.put_member(board, member, member_request({}))
    distinct: dict[str, set[tuple[str | None, int, Decimal]]] = {m: set() for m in MEMBERS}
    claimed: dict[str, set[tuple[str | None, int, Decimal]]] = {m: set() for m in MEMBERS}
    for number, (sent, failed) in enumerate(requests):
        logged = [EventRequest(m, _value_of(m, e, v), e) for m, e, v in sent]
        if failed:
            _log_without_claiming(service, board, logged)
        else:
            service.members.log_events(board, logged)
        with_ids = {event.member_id for event in logged if event.event_id}
        for position, event in enumerate(logged):
            # an event without an id is its own; one with an id is one per member and id
            name = (event.event_id, -1) if event.event_id else (None, number * 100 + position)
            distinct[event.member_id].add((*name, event.value))
            # a failed request's page without ids was claimed as it was logged
            if not failed or event.member_id not in with_ids:
                claimed[event.member_id].add((*name, event.value))

    def total(model: dict[str, set[tuple[str | None, int, Decimal]]], member: str) -> tuple[Decimal, int]:
        return sum((value for _, _, value in model[member]), Decimal(0)), len(model[member])

    # Then before any fold, a fresh read counts every distinct event of the requests that
    # claimed their ids
    for member in MEMBERS[:2]:
        read, pending = service.members.fresh_member(board, member)
        assert (read.score or 0, pending) == total(claimed, member)

    # When the stream's records are folded in random batches, each maybe delivered again in
    # part (a suffix of it and of the batch before: a retry from a failed record), or
    # reversed (a bisected, regrouped retry)
    draw = random.Random(seed)
    records = _log_records(table_stream, board)
    previous: list[Record] = []
    for batch in _cuts(draw, records):
        assert service.folder.fold(batch) == set()
        again = previous[draw.randrange(len(previous) + 1) :] + batch[draw.randrange(len(batch) + 1) :]
        if draw.random() < 0.5:
            again.reverse()
        assert service.folder.fold(again) == set()
        for member in MEMBERS[:2]:  # a fresh read meanwhile is never more than every event
            read, pending = service.members.fresh_member(board, member)
            assert total(claimed, member)[0] <= (read.score or 0) <= total(distinct, member)[0]
        previous = batch
    assert service.folder.fold(records) == set()

    # Then every distinct event counted exactly once, and the ghost's dropped and counted once
    for member in MEMBERS[:2]:
        read, pending = service.members.fresh_member(board, member)
        assert (read.score or 0, pending) == (total(distinct, member)[0], 0)
    assert service.boards.get_board(board).dropped_events == total(distinct, "ghost")[1]


# -- fresh reads with many events waiting --------------------------------------------------


def _requests(member: str, count: int, prefix: str) -> Iterator[list[EventRequest]]:
    for start in range(0, count, 100):
        end = min(start + 100, count)
        yield [EventRequest(member, Decimal(1), f"{prefix}-{n:032x}") for n in range(start, end)]


def test_a_fresh_read_answers_with_10000_events_waiting_within_the_bound(
    service: Services, metered: Metered
) -> None:
    # Given a member with 10,000 events waiting, each with an id as long as the Python
    # client's, nothing folding them, and 100 of them sent again
    board = unique_id("fresh")
    service.boards.put_board(board, board_request({"shards": Decimal(2)}))
    service.members.put_member(board, "hot", member_request({"score": Decimal(5)}))
    for request in _requests("hot", 10_000, "hot"):
        service.members.log_events(board, request)
    service.members.log_events(board, next(_requests("hot", 100, "hot")))

    # When it is read fresh
    (member, pending), sample = metered.read(lambda: metered.service.members.fresh_member(board, "hot"))

    # Then it answers: the folded score plus every distinct event, within the bound
    assert (member.score, pending) == (Decimal(10_005), 10_000)
    assert sample.rcu <= cost.READ_BOUND
    assert sample.rcu <= 40  # a page per request: some 100 small pages, and a query per partition


def test_only_increment_boards_take_events(service: Services) -> None:
    board = unique_id("best")
    service.boards.put_board(board, board_request({"operator": "best"}))
    with pytest.raises(ValidationError, match="only increment boards take events"):
        service.members.log_events(board, _events(("a", 1, None)))
    with pytest.raises(ValidationError, match=r"events\[1\].value"):
        _events(("a", 1, None), ("b", "x", None))
