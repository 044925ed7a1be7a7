"""Small helpers the test layers share."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

import requests

if TYPE_CHECKING:
    from bench.measure import Recorder, Sample
    from devstack.streamtail import StreamTail
    from podium.config import Settings
    from podium.consistency import ConsistencyReport
    from podium.models import Page
    from podium.ranking import TopStats
    from podium.wiring import Services

T = TypeVar("T")

# The write-sharding lab's example: views per image. Its top 3 is 006, 004, 005.
IMAGE_VIEWS = {
    "img-001.jpg": 27,
    "img-002.jpg": 23,
    "img-003.jpg": 16,
    "img-004.jpg": 83,
    "img-005.jpg": 52,
    "img-006.jpg": 94,
}


# The fields of a board and of a member as the API shows them.
BOARD_FIELDS = {
    "boardId",
    "order",
    "operator",
    "tieBreak",
    "shards",
    "title",
    "memberCount",
    "clientWrites",
    "publicRead",
    "limits",
    "createdAt",
}
MEMBER_FIELDS = {"boardId", "memberId", "score", "data", "hidden", "createdAt", "updatedAt"}


class TickingClock:
    """A clock that moves ``step`` forward every time it is read, from ``start``: writes in
    a row get distinct times, and a test can move ``moment`` on by hand."""

    def __init__(
        self,
        start: datetime = datetime(2026, 11, 22, 10, 0, tzinfo=UTC),
        step: timedelta = timedelta(milliseconds=1),
    ) -> None:
        self.moment = start
        self.step = step

    def __call__(self) -> datetime:
        self.moment += self.step
        return self.moment


def table_of(settings: Settings, pk: str) -> str:
    """Which of the template's two tables holds the items of partition ``pk``, for a test
    that reads or writes around the service (``podium.dal.schema.streamed``)."""
    from podium.dal import schema

    return settings.table if schema.streamed(pk) else settings.state_table


def unique_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def decimal_json(response: requests.Response) -> Any:
    """A response body with every number read as an exact Decimal."""
    return json.loads(response.text, parse_float=Decimal, parse_int=Decimal)


def eventually(check: Callable[[], T], timeout: float = 60.0, interval: float = 0.2) -> T:
    """Retry ``check`` until it stops raising AssertionError (for stream-driven state).
    The timeout is generous on purpose: a check that passes returns at once, and on a
    loaded machine the stream consumers can trail by far more than they do in AWS (how far
    the head lags is measured by `make bench`, not asserted here)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(interval)


def assert_equal(actual: object, expected: object) -> None:
    """An assertion as a call, for ``eventually(lambda: assert_equal(read(), expected))``."""
    assert actual == expected


# How far each table's stream has been read past, by shard: where the last tail that
# ``stream_tail_from_now`` made began. The integration tests share one table, whose stream
# grows with every test; reading it from its start for each test made the session's stream
# reads grow with the square of its length.
_STREAM_READ_PAST: dict[tuple[str, str], dict[str, str]] = {}


def stream_tail_from_now(client: Any, endpoint: str, table: str) -> StreamTail:
    """A tail of the table's stream that hands over the records written from now on, as the
    Lambda event source mapping delivers them. What came before belongs to other tests: it
    is read past once, from where the previous such tail began."""
    from devstack.streamtail import StreamTail

    key = (endpoint, table)
    past = StreamTail.of_table(client, endpoint, table, after=_STREAM_READ_PAST.get(key))
    past.read()
    _STREAM_READ_PAST[key] = dict(past.positions)
    return StreamTail(past.streams, past.arn, after=past.positions)


class TableStream:
    """The table's stream records written since it was made: all of them on each call to
    ``records``, for a test that looks at the stream more than once."""

    def __init__(self, client: Any, endpoint: str, table: str) -> None:
        self.tail = stream_tail_from_now(client, endpoint, table)
        self.seen: list[dict[str, Any]] = []

    def records(self) -> list[dict[str, Any]]:
        self.seen += self.tail.read()
        return list(self.seen)


@contextmanager
def small_head() -> Iterator[None]:
    """A board head of 8 keys (pages of up to 6) and a ladder every 4 positions down to 40,
    so that boards of a few dozen members have both, and their ladders wear out quickly."""
    from unittest.mock import patch

    from podium import head

    with (
        patch.object(head, "CAPACITY", 8),
        patch.object(head, "SERVES_UP_TO", 6),
        patch.object(head, "REFILL_BELOW", 7),
        patch.object(head, "LADDER_STEP", 4),
        patch.object(head, "LADDER_REACH", 40),
        patch.object(head, "LADDER_MAX_GAP", 8),
        patch.object(head, "LADDER_REREAD_AFTER", 60),
    ):
        yield


def expected_listing(scores: dict[str, Decimal]) -> list[tuple[int, str, Decimal]]:
    """Higher is better, ties share a rank and are listed by member id."""
    ordered = sorted(scores, key=lambda m: (-scores[m], m))
    return [(1 + sum(1 for s in scores.values() if s > scores[m]), m, scores[m]) for m in ordered]


def pages(service: Services, board: str, limit: int) -> Iterator[tuple[Page, TopStats]]:
    """Every page of the listing read from the index, following nextCursor, with what its
    read cost (``ReadService.top_read``)."""
    cursor = None
    while True:
        read = service.reads.top_read(board, limit, cursor, with_data=False, consistent=True)
        page = read.page
        assert read.stats is not None
        yield page, read.stats
        assert len(page.entries) <= limit
        if page.next_cursor is None:
            return
        assert len(page.entries) == limit
        cursor = page.next_cursor


def walk(service: Services, board: str, limit: int) -> tuple[list[tuple[int, str, Decimal]], int]:
    """Every entry of the listing, page after page; and the most rounds a page took."""
    entries: list[tuple[int, str, Decimal]] = []
    most_rounds = 0
    for page, stats in pages(service, board, limit):
        most_rounds = max(most_rounds, stats.rounds)
        entries.extend((e.rank, e.member_id, e.score) for e in page.entries)
    return entries, most_rounds


def build_count_tree(service: Services, board_id: str, period: str = "all") -> int:
    """Build the board's count tree from its index (``podium.treebuild``), as a board
    loaded without its stream needs before the tree can count it (entries at version
    ``(0, 0)``: a later record of a member finds its entry as another version's, which is
    correct and costs a write more). Over a tree of the same keys, or of none; the
    members."""
    from podium import fanout, keys, treebuild
    from podium.counttree import Entry

    partitions = keys.partitions(board_id, service.boards.settings(board_id), period)
    pages = fanout.gather(lambda p: service.db.index.keys_in_range(p, None, None), partitions)
    entries = {keys.member_of_key(k): Entry(k, (0, 0)) for page in pages for k in page}
    service.db.tree.put_nodes(board_id, period, treebuild.build(entries), None)
    return len(entries)


def verify_board(
    settings: Settings,
    board_id: str,
    *,
    repair: bool = False,
    period: str | None = None,
    settle: Callable[[], None] | None = None,
    endpoint: str | None = None,
) -> ConsistencyReport:
    """The consistency checker's report on a board of the tables ``settings`` names
    (``podium.consistency``), on the DynamoDB at ``endpoint``, or else at
    ``AWS_ENDPOINT_URL_DYNAMODB`` (never AWS itself). With ``repair``, what differs is put
    right and the board checked again: after ``settle`` when a repair goes through the
    stream (a test that delivers the stream itself passes it), or else as soon as the
    running stream consumers have carried it (up to 30 s)."""
    import os

    import boto3

    from podium.dal import Database
    from podium.wiring import Services

    endpoint = endpoint or os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")
    if not endpoint:
        raise RuntimeError("verify_board needs a local DynamoDB: AWS_ENDPOINT_URL_DYNAMODB, or endpoint")
    client = boto3.client("dynamodb", endpoint_url=endpoint)
    checker = Services(Database.connect(settings, client=client)).checker
    checker.settle = settle
    return checker.check(board_id, period=period, repair=repair)


class Metered:
    """The service on a client whose every request is recorded, and what a read cost
    (``bench.measure``: DynamoDB Local's consumed capacity, at DynamoDB's minimums)."""

    def __init__(self, endpoint: str, settings: Settings) -> None:
        import boto3
        from botocore.config import Config

        from bench.measure import Recorder
        from podium.dal import Database
        from podium.wiring import Services

        client = boto3.client("dynamodb", endpoint_url=endpoint, config=Config(max_pool_connections=128))
        self.recorder: Recorder = Recorder()
        self.recorder.attach(client)
        self.service = Services(Database.connect(settings, client=client))

    def read(self, read: Callable[[], T]) -> tuple[T, Sample]:
        from bench.measure import Sample

        with self.recorder.window() as window:
            answer = read()
        return answer, Sample.of(window)
