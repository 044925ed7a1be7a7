"""A period's final results on DynamoDB Local, announced exactly once (podium.results): the
job run twice, a run killed midway and run again, and events logged before the end but
folded after it.

A run announces every board of its table, so each test has tables of its own (as the
snapshot tests do), in a database of its own (``own_database``): it sees its own boards
only, the job's first run is its own, and the session's streams do not slow its writes.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from devstack import template as template_module
from devstack.stack import create_tables
from devstack.streams import StreamTail
from podium import results
from podium.dal import Database
from podium.models import Notification
from podium.validation import board_request, events_request, member_request
from podium.wiring import Services
from tests.conftest import OwnDatabase
from tests.helpers import expected_listing, unique_id

pytestmark = pytest.mark.integration

# A Wednesday of 2026-W48; the week ends on Monday 2026-11-30 00:00 UTC.
IN_THE_WEEK = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
WEEK = "2026-W48"
AFTER_THE_END = datetime(2026, 11, 30, 0, 0, tzinfo=UTC) + results.GRACE + timedelta(seconds=1)


class Clock:
    """The service's clock, moved by the test (a moment on, every read, so writes differ)."""

    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        self.moment += timedelta(microseconds=1)
        return self.moment


class Crash(Exception):
    """The job's process dying: raised by the publisher after ``crash_after`` publishes."""


@dataclass
class Topic:
    """The SNS topic as subscribers see it: every message published, in order."""

    crash_after: int | None = None
    notifications: list[Notification] = field(default_factory=list)
    messages: list[tuple[dict[str, Any], dict[str, str]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, notification: Notification) -> None:
        with self.lock:
            if self.crash_after is not None and len(self.notifications) >= self.crash_after:
                raise Crash("killed midway")
            self.notifications.append(notification)

    def publish_message(self, body: Mapping[str, Any], attributes: Mapping[str, str]) -> None:
        with self.lock:
            self.messages.append((dict(body), dict(attributes)))


@pytest.fixture
def store(own_database: OwnDatabase) -> Database:
    """The template's tables in a database of this test's own (overrides the shared store)."""
    client = own_database.client()
    spec = template_module.read(f"res{uuid.uuid4().hex[:8]}-")
    create_tables(client, spec)
    return Database.connect(spec.settings(), client=client)


@pytest.fixture
def clock() -> Clock:
    return Clock(IN_THE_WEEK)


@pytest.fixture
def service(store: Database, clock: Clock) -> Services:
    return Services(store, clock=clock)


@pytest.fixture
def stream(store: Database, own_database: OwnDatabase, service: Services) -> Any:
    """Deliver what the table's stream holds since the last call to the aggregator (counts,
    heads, trees) and the fold, as the stack's poller does."""
    arn = own_database.client().describe_table(TableName=store.tables.table)["Table"]["LatestStreamArn"]
    tail = StreamTail(own_database.streams(), arn)
    seen: set[str] = set()

    def deliver() -> None:
        fresh = [r for r in tail.read() if r["eventID"] not in seen]
        seen.update(r["eventID"] for r in fresh)
        assert service.folder.fold(fresh) == set()
        assert service.aggregator.keep_batch(fresh) == set()

    return deliver


def _weekly_board(service: Services, scores: dict[str, Decimal], **settings: Any) -> str:
    board = unique_id("weekly")
    body = {"shards": Decimal(4), "reset": "weekly", **settings}
    service.boards.put_board(board, board_request(body))
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(
            pool.map(
                lambda m: service.members.put_member(board, m, member_request({"score": scores[m]})), scores
            )
        )
    return board


def _inboxes(service: Services, board: str, members: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each member's periodResult notifications, as the inbox lists them."""
    found = {}
    for member in members:
        page, _ = service.social.notifications(board, member, 100, None)
        found[member] = [n.to_json() for n in page if n.type == "periodResult"]
    return found


def test_the_job_run_twice_announces_the_final_top_once(
    service: Services, store: Database, clock: Clock, stream: Any
) -> None:
    # Given a weekly board in week W48 with ties at the cut (announceTop 5), decimal scores
    rng = random.Random("twice")
    scores = {f"p{i:03d}": Decimal(rng.randrange(0, 30)) / 4 for i in range(140)}
    board = _weekly_board(service, scores, announceTop=Decimal(5))
    stream()  # the stream keeps the period's member count

    # When the clock passes the end of the week, and the job runs twice
    clock.moment = AFTER_THE_END
    topic = Topic()
    job = results.PeriodResults(service, topic)
    first = job.announce_due(clock())
    second = job.announce_due(clock())

    # Then one periodClosed message: the model's final top 100 and memberCount
    listing = expected_listing(scores)
    assert (first.announced, second.announced) == ([f"{board} {WEEK}"], [])
    [(body, attributes)] = topic.messages
    assert attributes == {"type": "periodClosed", "boardId": board, "announcementId": body["announcementId"]}
    assert (body["period"], body["memberCount"]) == (WEEK, len(scores))
    assert [(e["rank"], e["memberId"], e["score"]) for e in body["entries"]] == listing[:100]

    # And every member ranked 5th or better (a tie at the cut whole) has one periodResult with
    # its rank and score, in its inbox and on the topic; nobody else has one
    expected = {m: (rank, s) for rank, m, s in listing if rank <= 5}
    assert len(expected) >= 5
    inboxes = _inboxes(service, board, list(scores))
    assert {
        m: [(n["period"], n["rank"], n["score"]) for n in told] for m, told in inboxes.items() if told
    } == {m: [(WEEK, rank, s)] for m, (rank, s) in expected.items()}
    assert Counter(n.member_id for n in topic.notifications) == Counter(list(expected))
    assert {(n.member_id, n.rank, n.score) for n in topic.notifications} == {
        (m, rank, s) for m, (rank, s) in expected.items()
    }


def test_a_run_killed_midway_is_finished_by_the_next_and_nobody_is_told_twice(
    service: Services, clock: Clock, stream: Any
) -> None:
    # Given a board whose announceTop reaches 250 members (three chunks of 100)
    scores = {f"m{i:03d}": Decimal(1000 - i) for i in range(260)}
    board = _weekly_board(service, scores, announceTop=Decimal(250))
    stream()
    clock.moment = AFTER_THE_END

    # When a run dies after 150 notifications (in its second chunk), and the next run goes on
    topic = Topic(crash_after=150)
    with pytest.raises(results.PeriodResultsFailed):
        results.PeriodResults(service, topic).announce_due(clock())
    told_before = len(topic.notifications)
    topic.crash_after = None
    finished = results.PeriodResults(service, topic).announce_due(clock())
    again = results.PeriodResults(service, topic).announce_due(clock())

    # Then the period was announced once: one periodClosed message
    assert told_before == 150
    assert (finished.announced, again.announced) == ([f"{board} {WEEK}"], [])
    assert len(topic.messages) == 1
    # And each of the 250 has exactly one notification in its inbox and one on the topic
    expected = {m: rank for rank, m, _ in expected_listing(scores) if rank <= 250}
    inboxes = _inboxes(service, board, list(scores))
    assert {m: [n["rank"] for n in told] for m, told in inboxes.items() if told} == {
        m: [rank] for m, rank in expected.items()
    }
    assert Counter(n.member_id for n in topic.notifications) == Counter(list(expected))


def test_events_logged_before_the_end_are_folded_before_the_results(
    service: Services, clock: Clock, stream: Any
) -> None:
    # Given a weekly increment board: scores, and views logged just before the week ends
    # that the fold has not counted yet
    scores = {"img-1": Decimal(10), "img-2": Decimal(12), "img-3": Decimal(11)}
    board = _weekly_board(service, scores, announceTop=Decimal(3))
    stream()
    clock.moment = datetime(2026, 11, 29, 23, 59, 59, tzinfo=UTC)
    views = [{"memberId": "img-1", "value": Decimal(1), "eventId": f"v-{i}"} for i in range(5)]
    service.members.log_events(board, events_request({"events": views}))

    # When the job runs after the end, before the fold
    clock.moment = AFTER_THE_END
    topic = Topic()
    waiting = results.PeriodResults(service, topic).announce_due(clock())

    # Then it announces nothing yet: the period's events are waiting
    assert (waiting.announced, waiting.waiting, topic.messages) == ([], [f"{board} {WEEK}"], [])

    # When the fold counts them, and the job runs again
    stream()
    done = results.PeriodResults(service, topic).announce_due(clock())

    # Then the results count them: img-1 has 15 and leads
    assert done.announced == [f"{board} {WEEK}"]
    [(body, _)] = topic.messages
    final = {**scores, "img-1": Decimal(15)}
    assert [(e["rank"], e["memberId"], e["score"]) for e in body["entries"]] == expected_listing(final)
    assert {(n.member_id, n.rank, n.score) for n in topic.notifications} == {
        (m, rank, s) for rank, m, s in expected_listing(final)
    }


def test_writes_after_the_end_go_to_the_new_week_and_change_nothing_announced(
    service: Services, clock: Clock, stream: Any
) -> None:
    # Given a week announced, and announceTop lowered to 1 for the weeks after
    scores = {"a": Decimal(3), "b": Decimal(2)}
    board = _weekly_board(service, scores, announceTop=Decimal(2))
    stream()
    clock.moment = AFTER_THE_END
    topic = Topic()
    results.PeriodResults(service, topic).announce_due(clock())
    service.boards.put_board(
        board, board_request({"shards": Decimal(4), "reset": "weekly", "announceTop": 1})
    )

    # When members score in the new week, and the job runs at the end of that week
    service.members.put_member(board, "b", member_request({"score": Decimal(50)}))
    service.members.put_member(board, "c", member_request({"score": Decimal(40)}))
    stream()
    rerun = results.PeriodResults(service, topic).announce_due(clock())
    clock.moment = AFTER_THE_END + timedelta(weeks=1)
    results.PeriodResults(service, topic).announce_due(clock())

    # Then W48 was announced once, as it ended; W49 with its own scores, to its top 1 only
    assert rerun.announced == []
    assert [
        (b["period"], [(e["memberId"], e["score"]) for e in b["entries"]]) for b, _ in topic.messages
    ] == [
        (WEEK, [("a", Decimal(3)), ("b", Decimal(2))]),
        ("2026-W49", [("b", Decimal(50)), ("c", Decimal(40))]),
    ]
    assert sorted((n.period or "", n.member_id, n.rank or 0) for n in topic.notifications) == [
        (WEEK, "a", 1),
        (WEEK, "b", 2),
        ("2026-W49", "b", 1),
    ]
