"""A popular member's overtaken fan-out, told a chunk at a time, on DynamoDB Local: the
notifier fed the table's real stream records through the template's filters, in batches
as the event source mapping hands them over, one invocation per batch (docs/streams.md,
"Popular members: the fan-out in chunks")."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from devstack import template
from devstack.streams import StreamTail, matches
from podium import keys
from podium.config import Settings
from podium.dal import Database, codecs, schema
from podium.models import BoardSettings, Notification, Rivals, ScoreState
from podium.stream.notify import Notifier
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import stream_tail_from_now, table_of, unique_id

pytestmark = pytest.mark.integration

CHUNK = 25
BATCH_SIZE = 100  # the template's BatchSize for NotifierFunction
BEFORE = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1_000_000)  # long before every change
AFTER = int(datetime(2027, 1, 1, tzinfo=UTC).timestamp() * 1_000_000)  # long after every change
NOTIFIER_FILTERS = next(
    c.filters for c in template.read().stream_consumers() if c.function == "NotifierFunction"
)


class Crash(Exception):
    """A fault injected by a test."""


@dataclass
class RecordingPublisher:
    published: list[Notification] = field(default_factory=list)
    fail_at: set[int] = field(default_factory=set)  # the publishes (1, 2, ...) that raise once
    calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, notification: Notification) -> None:
        with self.lock:
            self.calls += 1
            if self.calls in self.fail_at:
                raise Crash(f"SNS failed on publish {self.calls}")
            self.published.append(notification)


class CountingSocial:
    """The real social store, counting the followers each invocation touches (judged: their
    scores and lists read; or forgotten: a deleted member taken out of their lists) and the
    notifications it deletes, and failing chosen writes before they are sent: of a job item
    (``fail_advances``), or of the edges of a chunk of followers forgotten, after their lists
    (``fail_edge_deletes``)."""

    def __init__(
        self, real: Any, fail_advances: set[int] | None = None, fail_edge_deletes: set[int] | None = None
    ) -> None:
        self.real = real
        self.touched = 0
        self.advances = 0
        self.edge_deletes = 0
        self.fail_advances = fail_advances or set()
        self.fail_edge_deletes = fail_edge_deletes or set()
        self.lock = threading.Lock()  # a chunk is forgotten on the notifier's pool

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def follower_states(self, board_id: str, followers: Any, period: str) -> Any:
        self.touched += len(followers)
        return self.real.follower_states(board_id, followers, period)

    def advance_fanout(self, *args: Any, **kwargs: Any) -> bool:
        self.advances += 1
        if self.advances in self.fail_advances:
            raise Crash(f"the notifier crashed before job write {self.advances}")
        return bool(self.real.advance_fanout(*args, **kwargs))

    def forget_rival(self, *args: Any) -> bool:
        with self.lock:
            self.touched += 1
        return bool(self.real.forget_rival(*args))

    def delete_followers(self, *args: Any) -> None:
        self.edge_deletes += 1
        if self.edge_deletes in self.fail_edge_deletes:
            raise Crash(f"the notifier crashed before edge delete {self.edge_deletes}")
        self.real.delete_followers(*args)

    def clear_inbox(self, *args: Any) -> tuple[int, bool]:
        cleared, more = self.real.clear_inbox(*args)
        self.touched += cleared
        return cleared, more


@dataclass
class EventSource:
    """Lambda's event source mapping for the notifier, on one board's records: the stream
    read where it stopped, the template's filters, batches of BATCH_SIZE, one invocation per
    batch (``Notifier.begin``, as the handler does); a record that raises is retried from
    there in a new invocation (ReportBatchItemFailures), and with ``twice`` every batch is
    delivered a second time (a lost checkpoint)."""

    tail: StreamTail
    board: str
    notifier: Notifier
    social: CountingSocial
    twice: bool = False
    invocations: list[int] = field(default_factory=list)  # followers (and notifications) touched in each
    crashes: int = 0

    def records(self) -> list[dict[str, Any]]:
        ours = (f"M#{self.board}#", f"J#{self.board}#")
        return [
            r
            for r in self.tail.read()
            if r["dynamodb"]["Keys"]["pk"]["S"].startswith(ours)
            and any(matches(p, r) for p in NOTIFIER_FILTERS)
        ]

    def invoke(self, batch: list[dict[str, Any]]) -> int:
        """One invocation: the index of the first record that failed, or len(batch)."""
        self.social.touched = 0
        self.notifier.begin()
        try:
            for done, record in enumerate(batch):
                try:
                    self.notifier.apply(record)
                except Crash:
                    self.crashes += 1
                    return done
            return len(batch)
        finally:
            self.invocations.append(self.social.touched)

    def deliver(self, batch: list[dict[str, Any]]) -> None:
        while batch:
            batch = batch[self.invoke(batch) :]

    def drain(self, limit: int = 500) -> None:
        """Deliver until the stream has no more of the board's records."""
        for _ in range(limit):
            records = self.records()
            if not records:
                return
            for start in range(0, len(records), BATCH_SIZE):
                batch = records[start : start + BATCH_SIZE]
                self.deliver(batch)
                if self.twice:
                    self.deliver(batch)
        raise AssertionError("the stream never ran dry")


@dataclass(frozen=True)
class Follower:
    member_id: str
    score: Decimal | None  # None: no score on the board
    since: int = BEFORE  # when it began to follow the rival
    hidden: bool = False


def seed_followers(store: Database, board: str, rivals: tuple[str, ...], followers: list[Follower]) -> None:
    """Score items, rivals lists and follower edges, written as the service writes them but
    in batches (2,500 members through the API would take minutes)."""
    settings = BoardSettings(shards=3)
    items: list[dict[str, Any]] = []
    for f in followers:
        listed = Rivals(ids=rivals, since=dict.fromkeys(rivals, f.since), version=1)
        items.append(codecs.rivals_item(board, f.member_id, listed))
        items.extend(schema.edge_key(board, rival, f.member_id) for rival in rivals)
        if f.score is not None:
            state = ScoreState.first(f.score, BEFORE, hidden=f.hidden)
            placement = keys.placement(board, settings, f.member_id, state, "all")
            attributes = codecs.score_attributes(state, placement.partition, placement.sort_key, None)
            items.append({**schema.score_key(board, f.member_id, "all"), **attributes})
    requests = [{"PutRequest": {"Item": item}} for item in items]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(store.tables.batch_write, [requests[i : i + 25] for i in range(0, len(requests), 25)]))


def overtaken_model(followers: list[Follower], old: Decimal, new: Decimal, moment: int) -> dict[str, Decimal]:
    """Who a rival's change from ``old`` to ``new`` (higher is better) at ``moment`` passes,
    with each one's score: a plain reading of API.md's rule."""
    return {
        f.member_id: f.score
        for f in followers
        if f.score is not None and not f.hidden and f.since <= moment and old <= f.score < new
    }


def inboxes(store: Database, board: str, members: list[str]) -> dict[str, list[Notification]]:
    def inbox(member: str) -> list[Notification]:
        found, _ = store.social.list_notifications(board, member, 100, None, 0)
        return found

    with ThreadPoolExecutor(32) as pool:
        return dict(zip(members, pool.map(inbox, members), strict=True))


def many_followers(count: int) -> list[Follower]:
    """``count`` followers with scores 0 to 299 (a third between the rival's old and new
    scores), and among them some the change must not tell: no score, hidden, or following
    only since after the change."""
    followers = []
    for i in range(count):
        member = f"fan-{i:05d}"
        if i % 97 == 0:
            followers.append(Follower(member, None))
        elif i % 89 == 0:
            followers.append(Follower(member, Decimal(150), hidden=True))
        elif i % 83 == 0:
            followers.append(Follower(member, Decimal(150), since=AFTER))
        else:
            followers.append(Follower(member, Decimal(i % 300)))
    return followers


Setup = Callable[..., tuple[str, list[Follower], EventSource, RecordingPublisher, Services]]


@pytest.fixture(scope="module")
def store(local_tables: Settings, dynamodb_endpoint: str) -> Database:
    """The store on a client with a connection for each thread of the notifier's pool."""
    import boto3
    from botocore.config import Config

    client = boto3.client("dynamodb", endpoint_url=dynamodb_endpoint, config=Config(max_pool_connections=128))
    return Database.connect(local_tables, client=client)


@pytest.fixture
def popular(
    service: Services, store: Database, local_tables: Any, dynamodb_client: Any, dynamodb_endpoint: str
) -> Setup:
    """A board whose member ``star`` (score 100) has the followers given, and the notifier's
    event source on it, with every record written so far already read."""

    def make(
        followers: list[Follower],
        rivals: tuple[str, ...] = ("star",),
        twice: bool = False,
        fail_publishes: set[int] | None = None,
        fail_advances: set[int] | None = None,
        fail_edge_deletes: set[int] | None = None,
    ) -> tuple[str, list[Follower], EventSource, RecordingPublisher, Services]:
        tail = stream_tail_from_now(dynamodb_client, dynamodb_endpoint, local_tables.table_name)
        board = unique_id("popular")
        service.boards.put_board(board, board_request({"shards": Decimal(3)}))
        for rival in rivals:
            service.members.put_member(board, rival, member_request({"score": Decimal(100)}))
        publisher = RecordingPublisher(fail_at=fail_publishes or set())
        social = CountingSocial(store.social, fail_advances, fail_edge_deletes)
        notifier = Notifier(social, store.members, store.index, publisher, service.boards.settings, CHUNK)
        source = EventSource(tail, board, notifier, social, twice=twice)
        source.drain()  # the rivals' first scores: the first of them leads
        seed_followers(store, board, rivals, followers)
        source.records()  # the followers' items, read past: they were there before
        source.invocations.clear()
        return board, followers, source, publisher, service

    return make


def _moment(store: Database, board: str, member: str) -> int:
    state = store.members.get_score(board, member, "all")
    assert state is not None
    return state.reached_at_us


def _check_told_once(
    store: Database,
    board: str,
    followers: list[Follower],
    publisher: RecordingPublisher,
    expected: dict[str, Decimal],
) -> None:
    # every follower's inbox holds exactly the overtaken notification the model expects
    told = inboxes(store, board, [f.member_id for f in followers])
    got = {
        member: [(n.by_member_id, n.score, n.by_score) for n in found if n.type == "overtaken"]
        for member, found in told.items()
    }
    assert {m: found for m, found in got.items() if found} == {
        member: [("star", score, Decimal(200))] for member, score in expected.items()
    }
    # and each was published once
    assert sorted(n.member_id for n in publisher.published if n.type == "overtaken") == sorted(expected)


def test_a_member_followed_by_600_tells_each_overtaken_follower_once_a_chunk_at_a_time(
    popular: Setup, store: Database
) -> None:
    # Given star (100) followed by 600 members, and a notifier that tells 25 per invocation
    board, followers, source, publisher, service = popular(many_followers(600))

    # When star goes from 100 to 200
    service.members.submit_score(board, "star", Decimal(100))
    source.drain()

    # Then exactly the followers the model says were passed are told, each once
    expected = overtaken_model(followers, Decimal(100), Decimal(200), _moment(store, board, "star"))
    assert 150 < len(expected) < 250
    _check_told_once(store, board, followers, publisher, expected)
    assert {n.type for n in publisher.published} == {"overtaken"}  # star led before and after

    # And no invocation judged more than one chunk of followers; it took one per chunk
    assert max(source.invocations) == CHUNK
    assert sum(source.invocations) == len(followers)
    assert sum(1 for judged in source.invocations if judged) == len(followers) // CHUNK

    # And the fan-out item is done: nothing is pending for star
    assert store.social.pending_fanouts(board, "star") == []


def test_a_crash_between_chunks_and_every_batch_delivered_twice_still_tell_each_once(
    popular: Setup, store: Database
) -> None:
    # Given star followed by 300, a notifier that crashes once after telling a chunk
    # (before writing the fan-out on) and once on a publish inside another chunk, and an
    # event source that delivers every batch twice
    board, followers, source, publisher, service = popular(
        many_followers(300), twice=True, fail_publishes={60}, fail_advances={4}
    )

    # When star goes from 100 to 200
    service.members.submit_score(board, "star", Decimal(100))
    source.drain()

    # Then both crashes happened and were retried, and still each follower the model
    # expects is told once, and published once
    assert source.crashes == 2
    expected = overtaken_model(followers, Decimal(100), Decimal(200), _moment(store, board, "star"))
    _check_told_once(store, board, followers, publisher, expected)

    # And no invocation, first or retried, judged more than one chunk
    assert max(source.invocations) == CHUNK
    assert store.social.pending_fanouts(board, "star") == []


def test_two_popular_members_changing_in_one_batch_share_the_invocations_chunk(
    popular: Setup, service: Services, store: Database
) -> None:
    # Given star and nova, both followed by the same 100 members
    board, followers, source, publisher, _ = popular(many_followers(100), rivals=("star", "nova"))

    # When both go from 100 to 200, in one batch
    service.members.submit_score(board, "star", Decimal(100))
    service.members.submit_score(board, "nova", Decimal(100))
    source.drain()

    # Then each follower the model expects is told by both, once each
    told = inboxes(store, board, [f.member_id for f in followers])
    for rival in ("star", "nova"):
        expected = overtaken_model(followers, Decimal(100), Decimal(200), _moment(store, board, rival))
        got = [(m, n.score) for m, found in told.items() for n in found if n.by_member_id == rival]
        assert sorted(got) == sorted(expected.items())
        published = [
            n.member_id for n in publisher.published if n.type == "overtaken" and n.by_member_id == rival
        ]
        assert sorted(published) == sorted(expected)

    # And the first invocation told one chunk in all, not one per member
    assert source.invocations[0] == CHUNK
    assert max(source.invocations) == CHUNK


def test_a_member_deleted_while_its_fanout_is_pending_still_tells_the_rest_first(
    popular: Setup, store: Database, dynamodb_client: Any, local_tables: Any
) -> None:
    # Given star followed by 300, whose change was told to its first chunk only (the
    # followers with scores 0 to 24: none of them passed; those from 100 to 199 it passed
    # are in later chunks)
    board, followers, source, publisher, service = popular(many_followers(300))
    service.members.submit_score(board, "star", Decimal(100))
    moment = _moment(store, board, "star")
    first = source.records()
    assert len(first) == 1
    source.deliver(first)
    assert publisher.published == []
    # and whose fan-out record is read late (on another shard, say)
    held = source.records()
    assert [r["dynamodb"]["Keys"]["pk"]["S"] for r in held] == [f"J#{board}#star"]

    # When star is deleted, its delete read before the fan-out's record, and the stream goes on
    service.members.delete_member(board, "star")
    source.deliver(source.records())
    source.deliver(held)
    source.drain()

    # Then the followers star passed are all told, once, and star is forgotten: the only
    # follower edges left are those of follows begun after the delete (of a star added
    # again), and nothing is pending
    expected = overtaken_model(followers, Decimal(100), Decimal(200), moment)
    assert len(expected) > 50
    _check_told_once(store, board, followers, publisher, expected)
    edges = dynamodb_client.query(
        TableName=local_tables.state_table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": f"F#{board}#star"}},
    )
    assert sorted(item["sk"]["S"] for item in edges["Items"]) == [
        f.member_id for f in followers if f.since == AFTER
    ]
    assert store.social.pending_fanouts(board, "star") == []
    # And no invocation, telling or forgetting, did more than one chunk
    assert max(source.invocations) == CHUNK


def _micros(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def _seed_inbox(store: Database, board: str, member: str, created: list[int], name: str) -> None:
    """Notifications to ``member`` (ids ``name-0``, ...), one created at each moment given."""
    for i, created_us in enumerate(created):
        told = Notification(
            f"{name}-{i}", "overtaken", board, member, f"fan-{i:05d}", Decimal(1), Decimal(2), created_us
        )
        store.social.put_notification(told, 3600)


def _lists_naming(store: Database, board: str, rival: str, members: list[str]) -> list[str]:
    """The members among ``members`` whose rivals list names ``rival``."""

    def names(member: str) -> bool:
        return rival in (store.social.get_rivals(board, member) or Rivals()).ids

    with ThreadPoolExecutor(32) as pool:
        return [m for m, named in zip(members, pool.map(names, members), strict=True) if named]


def _partition(dynamodb_client: Any, tables: Settings, pk: str) -> list[str]:
    """The sort keys of every item of partition ``pk``."""
    pages = dynamodb_client.get_paginator("query").paginate(
        TableName=table_of(tables, pk),
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": pk}},
        ConsistentRead=True,
    )
    return sorted(item["sk"]["S"] for page in pages for item in page["Items"])


def test_a_member_followed_by_300_is_forgotten_a_chunk_at_a_time_and_a_follow_after_the_delete_stays(
    popular: Setup, store: Database, dynamodb_client: Any, local_tables: Any
) -> None:
    # Given star followed by 300 members, with 60 notifications in its inbox, and a notifier
    # that does 25 followers (or notifications) per invocation and crashes twice: in the middle
    # of a chunk (its followers' lists done, before their edges' delete) and after a chunk
    # (before the third write of the job item)
    board, followers, source, publisher, service = popular(
        many_followers(300), fail_edge_deletes={2}, fail_advances={3}
    )
    members = [f.member_id for f in followers]
    _seed_inbox(store, board, "star", [BEFORE + i for i in range(60)], "old")

    # When star is deleted, and the notifier reads its removal and three more records
    service.members.delete_member(board, "star")
    deleted = _micros(service.clock())  # the delete is over: its tombstone is older
    removal = source.records()
    source.deliver(removal)
    for _ in range(3):
        source.deliver(source.records())

    # Then star is forgotten in a chunk per invocation, a crash retried, and not yet all of it
    assert source.invocations[:6] == [CHUNK] * 6
    assert source.crashes == 2
    assert len(_lists_naming(store, board, "star", members)) > 100
    assert store.social.pending_fanouts(board, "star", forgets_only=True)

    # When star is added again at 0 while the rest is forgotten: fan-00000 (whose list no
    # longer names it, joining with a score of 1) and zoe (5, new, after every fan in id
    # order) follow it; it scores 1,000; a notification is sent to it; the notifier reads its
    # changes before the forgetting's next record (on another shard, say), and the removal
    # again, late
    service.members.put_member(board, "star", member_request({"score": Decimal(0)}))
    service.members.put_member(board, "fan-00000", member_request({"score": Decimal(1)}))
    service.members.put_member(board, "zoe", member_request({"score": Decimal(5)}))
    followed = _micros(service.clock())  # the follows below begin later
    service.social.put_rivals(board, "fan-00000", ["star"])
    service.social.put_rivals(board, "zoe", ["star"])
    service.members.submit_score(board, "star", Decimal(1000))
    moment = _moment(store, board, "star")
    _seed_inbox(store, board, "star", [moment], "new")
    fresh = source.records()
    source.deliver([r for r in fresh if r["dynamodb"]["Keys"]["pk"]["S"].startswith("M#")])
    source.deliver(removal)
    source.deliver([r for r in fresh if r["dynamodb"]["Keys"]["pk"]["S"].startswith("J#")])
    source.drain()

    # Then no invocation touched more than one chunk; the forgetting took one per chunk
    assert max(source.invocations) <= CHUNK
    assert sum(1 for touched in source.invocations if touched) >= (len(followers) + 60) // CHUNK
    # And the only lists that name star, and the only edges to it, are of follows begun
    # after the delete: those seeded as later, fan-00000's and zoe's
    later = [f.member_id for f in followers if f.since > deleted]
    assert _lists_naming(store, board, "star", [*members, "zoe"]) == sorted([*later, "fan-00000", "zoe"])
    table = local_tables
    assert _partition(dynamodb_client, table, f"F#{board}#star") == sorted([*later, "fan-00000", "zoe"])
    # And of its inbox only what was sent to the star added again is left (the one seeded,
    # and its newLeader)
    inbox = _partition(dynamodb_client, table, f"N#{board}#star")
    assert f"{moment:017d}#new-0" in inbox
    assert all(int(sk.split("#")[0]) > deleted for sk in inbox)
    assert store.social.pending_fanouts(board, "star") == []

    # And the new star's change told those it passed among its followers since the delete
    # (the model), not those of the old star that the forgetting had not reached yet
    following = [f for f in followers if f.since > deleted]
    following += [
        Follower("fan-00000", Decimal(1), since=followed),
        Follower("zoe", Decimal(5), since=followed),
    ]
    expected = overtaken_model(following, Decimal(0), Decimal(1000), moment)
    assert sorted(expected) == ["fan-00000", "zoe"]
    told = inboxes(store, board, [*members, "zoe"])
    got = {
        m: [(n.by_member_id, n.score) for n in found if n.type == "overtaken"] for m, found in told.items()
    }
    assert {m: found for m, found in got.items() if found} == {m: [("star", s)] for m, s in expected.items()}
    assert sorted(n.member_id for n in publisher.published if n.type == "overtaken") == sorted(expected)
