"""The head and the count tree, kept from DynamoDB Local's real change stream by the
aggregator, agree with a plain sorted list: while the tree splits under changes still in
flight, when records are delivered twice or replayed late by the redrive, in each period
of a time-windowed board, and after a rebuild from the index."""

from __future__ import annotations

import json
import random
from bisect import bisect_left
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from bench.load import Population, grow_board, member_id
from bench.measure import Sample
from devstack.functions import LambdaContext
from devstack.streams import failure_message
from podium import counttree, keys, treebuild
from podium.config import Settings
from podium.counttree import ROOT, Count, Entry, Inner, Leaf
from podium.dal import Database, schema
from podium.dal.streams import QueuedMessage
from podium.errors import NotFound
from podium.periods import ALL_TIME
from podium.redrive import REPLAYED, Redrive
from podium.stream.aggregate import Aggregator
from podium.stream.entrypoint import stream_entrypoint
from podium.treereads import TreeReader
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import Metered, TickingClock, expected_listing, stream_tail_from_now, unique_id, walk
from tests.treestore import assert_counts_converged, small_nodes

pytestmark = pytest.mark.integration


def stepping_clock() -> TickingClock:
    """Moves 7 ms forward per read, so a few hundred writes span several seconds."""
    return TickingClock(datetime(2026, 11, 22, 12, 0, tzinfo=UTC), timedelta(milliseconds=7))


@pytest.fixture
def small_tree() -> Iterator[None]:
    """Nodes of 4 entries or children, so that a board of a hundred members splits leaves,
    inner nodes and the root many times while the stream is applied."""
    with small_nodes(4, 4):
        yield


class Stream:
    """Hands out the board's stream records in order, a part at a time, from those written
    after it was made (the shared stream holds the whole session)."""

    def __init__(self, client: Any, endpoint: str, table: str, board: str) -> None:
        self.tail = stream_tail_from_now(client, endpoint, table)  # what came before is others'
        self.board = board
        self.pending: list[dict[str, Any]] = []

    def fetch(self) -> None:
        prefix = f"M#{self.board}#"
        self.pending += [r for r in self.tail.read() if r["dynamodb"]["Keys"]["pk"]["S"].startswith(prefix)]

    def take(self, count: int) -> list[dict[str, Any]]:
        taken, self.pending = self.pending[:count], self.pending[count:]
        return taken


def deliver(aggregator: Aggregator, batch: list[dict[str, Any]]) -> None:
    assert aggregator.keep_heads(batch) == set()
    for record in batch:
        aggregator.apply(record)


def deliver_batch(aggregator: Aggregator, batch: list[dict[str, Any]]) -> None:
    """As the aggregator's function applies a batch from the stream: the counts, heads and
    trees for the whole batch, then each record's rollups."""
    assert aggregator.keep_batch(batch) == set()
    for record in batch:
        aggregator.roll_up(record)


def index_keys(store: Database, board: str, period: str = ALL_TIME) -> list[str]:
    """Every sort key of the board's index in ``period``, sorted."""
    board_settings = Services(store).boards.settings(board)
    partitions = keys.partitions(board, board_settings, period)
    return sorted(k for p in partitions for k in store.index.keys_in_range(p, "", None))


def assert_tree_counts_the_index(store: Database, board: str, period: str = ALL_TIME) -> list[str]:
    """The board's count tree of ``period`` holds exactly the members of its index, each
    once, at its key, in the leaf whose range holds it; every inner node counts what its
    children hold; and the members below any bound, read as a rank reads them, are the
    sorted index's. The index's keys, sorted."""
    listed = index_keys(store, board, period)
    nodes = store.tree.all_nodes(board, period)
    placed: dict[str, list[str]] = {}
    for node in nodes:
        if isinstance(node, Leaf):
            for member, entry in node.entries.items():
                assert counttree.holds(node, entry.key), (node.lo, node.hi, entry)
                placed.setdefault(member, []).append(entry.key)
    assert placed == {keys.member_of_key(k): [k] for k in listed}
    assert_counts_converged(nodes)
    bounds = sorted({"", *listed, *(k + "~" for k in listed[::3]), "~"})
    expected = [bisect_left(listed, bound) for bound in bounds]
    assert TreeReader(store.tree).count_below(board, period, bounds) == expected
    assert TreeReader(store.tree).count_below(board, period, bounds, consistent=True) == expected
    return listed


def expected_rank(scores: dict[str, Decimal], member: str) -> int:
    return 1 + sum(1 for other in scores.values() if other > scores[member])


@pytest.mark.parametrize("batched", [False, True], ids=["record by record", "in batches"])
def test_the_tree_and_the_head_stay_exact_while_the_tree_splits_under_changes_in_flight(
    batched: bool,
    store: Database,
    local_tables: Settings,
    dynamodb_client: Any,
    dynamodb_endpoint: str,
    small_tree: None,
    head_in_small_sizes: None,
) -> None:
    # Given a board of 160 members on 3 shards whose scores change, some members leave,
    # some are hidden and shown again, and the stream is applied a random part at a time
    # (some parts twice) while it goes on (the head holds 8 keys and its ladder reaches 40)
    rng = random.Random(5)
    clock = stepping_clock()
    service = Services(store, clock=clock)
    aggregator = Aggregator(store, service.boards.settings, clock)
    apply = deliver_batch if batched else deliver
    board = unique_id("tree")
    service.boards.put_board(board, board_request({"shards": 3, "operator": "set"}))
    stream = Stream(dynamodb_client, dynamodb_endpoint, local_tables.table_name, board)
    scores: dict[str, Decimal] = {}
    hidden: set[str] = set()
    for round_ in range(4):
        for index in range(40):
            member = f"p{round_}-{index}"
            scores[member] = Decimal(rng.randrange(60))  # few values: many ties
            service.members.put_member(board, member, member_request({"score": scores[member]}))
        for member in rng.sample(sorted(scores), 30):
            scores[member] = Decimal(rng.randrange(60))
            service.members.submit_score(board, member, scores[member])
        for member in rng.sample(sorted(scores), 5):
            service.members.delete_member(board, member)
            del scores[member]
            hidden.discard(member)
        for member in rng.sample(sorted(scores), 4):
            was_hidden = member in hidden
            service.members.put_member(board, member, member_request({"hidden": not was_hidden}))
            (hidden.discard if was_hidden else hidden.add)(member)
        stream.fetch()
        batch = stream.take(rng.randrange(len(stream.pending) // 2, len(stream.pending)))
        apply(aggregator, batch)
        # a retry delivers the batch again from a failed record on: it counts once
        apply(aggregator, batch[len(batch) // 3 :])

    # When the rest of the stream arrives
    stream.fetch()
    apply(aggregator, stream.take(len(stream.pending)))

    # Then the tree has split into several levels, holds exactly the members the index
    # holds (the shown ones of the model), and counts like the sorted index
    shown = {m: s for m, s in scores.items() if m not in hidden}
    listed = assert_tree_counts_the_index(store, board)
    assert {keys.member_of_key(k) for k in listed} == set(shown)
    assert max(node.level for node in store.tree.all_nodes(board, ALL_TIME)) >= 2
    assert service.boards.get_board(board).member_count == len(shown)
    # and the members above each member's key are its rank's, as the model ranks it
    # (ties share a rank: those with a better score sort first)
    by_member = {keys.member_of_key(k): k for k in listed}
    reader = TreeReader(store.tree)
    for member in rng.sample(sorted(shown), 40):
        better = keys.order_of(service.boards.settings(board)).sort_key(shown[member], "", 0)
        assert 1 + reader.count_below(board, ALL_TIME, [better])[0] == expected_rank(shown, member)
        assert by_member[member] >= better
    # and the head answers the first pages exactly like the index does
    assert store.structures.get_head(board, "all") is not None
    for limit in (1, 7, 10, 50, 100):
        from_head = service.reads.top(board, limit, None, False)
        from_index = service.reads.top(board, limit, None, False, consistent=True)
        assert from_head.entries == from_index.entries
        assert from_head.next_cursor == from_index.next_cursor
    # and every page read from the index, steered by that head's ladder (whose counts the
    # batches delivered twice have moved twice), is the sorted board
    for limit in (3, 10):
        entries, most_rounds = walk(service, board, limit)
        assert entries == expected_listing(shown)
        assert most_rounds <= 2


def test_each_period_of_a_daily_board_has_a_tree_of_its_own_members(
    store: Database,
    local_tables: Settings,
    dynamodb_client: Any,
    dynamodb_endpoint: str,
    small_tree: None,
) -> None:
    # Given a daily board: members score on two days, some on one only, one hidden on the
    # second day (hidden in every period), the stream delivered twice
    rng = random.Random(22)
    clock = TickingClock(datetime(2030, 3, 1, 20, 0, tzinfo=UTC), timedelta(milliseconds=1))
    service = Services(store, clock=clock)
    aggregator = Aggregator(store, service.boards.settings, clock)
    board = unique_id("tree-daily")
    service.boards.put_board(board, board_request({"shards": 2, "reset": "daily", "retainPeriods": 1}))
    stream = Stream(dynamodb_client, dynamodb_endpoint, local_tables.table_name, board)
    days: dict[str, dict[str, Decimal]] = {"2030-03-01": {}, "2030-03-02": {}}
    for day, scores in days.items():
        clock.moment = datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC)
        for index in rng.sample(range(40), 30):
            member = f"d{index:02d}"
            if not any(member in s for s in days.values()):
                service.members.put_member(board, member, member_request({}))
            scores[member] = Decimal(rng.randrange(25))
            service.members.submit_score(board, member, scores[member])
    cheat = sorted(days["2030-03-02"])[0]
    service.members.put_member(board, cheat, member_request({"hidden": True}))
    stream.fetch()
    batch = stream.take(len(stream.pending))
    deliver(aggregator, batch)
    deliver(aggregator, batch)

    # Then each day's tree holds that day's shown members, and counts like its index
    for day, scores in days.items():
        listed = assert_tree_counts_the_index(store, board, day)
        assert {keys.member_of_key(k) for k in listed} == set(scores) - {cheat}, day

        # and its items expire with the period's score items
        def ttl(key: dict[str, Any]) -> str:
            table = local_tables.table if schema.streamed(key["pk"]["S"]) else local_tables.state_table
            item = dynamodb_client.get_item(TableName=table, Key=key)["Item"]
            return str(item["ttl"]["N"])

        member = sorted(scores)[0]
        assert ttl(schema.tree_key(board, day, None, "")) == ttl(schema.score_key(board, member, day))


def test_a_record_replayed_by_the_redrive_after_a_newer_one_counts_its_member_once(
    store: Database, local_tables: Settings, dynamodb_client: Any, dynamodb_endpoint: str, small_tree: None
) -> None:
    # Given a board of 20 members whose stream has been applied, one of whom joined low and
    # then moved to the top, into another leaf (its records in order: no trace left)
    service = Services(store, clock=TickingClock())
    aggregator = Aggregator(store, service.boards.settings, service.clock)
    board = unique_id("replayed")
    service.boards.put_board(board, board_request({"shards": 2}))
    stream = Stream(dynamodb_client, dynamodb_endpoint, local_tables.table_name, board)
    scores = {f"m{i:02d}": Decimal(i * 5) for i in range(19)}
    scores["ana"] = Decimal(12)
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score}))
    service.members.submit_score(board, "ana", Decimal(500))
    scores["ana"] = Decimal(500)
    stream.fetch()
    records = stream.take(len(stream.pending))
    deliver(aggregator, records)
    joined = next(r for r in records if r["dynamodb"]["Keys"] == schema.score_key(board, "ana", ALL_TIME))
    assert joined["eventName"] == "INSERT"

    # When the redrive replays ana's first record (its batch was given up after all its
    # records had been applied): the aggregator's handler gets the event as the redrive
    # builds it, from a failure message of the batch
    handler = stream_entrypoint(
        aggregator.apply, "Replayed", replay=lambda record: aggregator.apply(record, replayed=True)
    )
    redrive = Redrive(OneMessage(joined), ReadBack([joined]), HandlerConsumer(handler))
    report = redrive.run()

    # Then it was replayed, and ana is counted once, at her newest key: the tree counts
    # like the sorted list of the scores
    assert [outcome.status for outcome in report.outcomes] == [REPLAYED], report.outcomes
    listed = assert_tree_counts_the_index(store, board)
    assert [keys.member_of_key(k) for k in listed] == [m for _, m, _ in expected_listing(scores)]


class OneMessage:
    """The failure queue, holding the on-failure record of one stream record's batch."""

    def __init__(self, record: dict[str, Any]) -> None:
        body = failure_message("AggregatorFunction", record["eventSourceARN"], "shard", [record])
        self.messages = [QueuedMessage("m1", json.dumps(body), "r1")]

    def receive(self) -> list[QueuedMessage]:
        taken, self.messages = self.messages, []
        return taken

    def delete(self, message: QueuedMessage) -> None:
        pass

    def release(self, message: QueuedMessage) -> None:
        self.messages.append(message)


class ReadBack:
    """The stream, read back: the records of the failed batch."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records

    def between(self, stream_arn: str, shard_id: str, first: str, last: str) -> list[dict[str, Any]]:
        return self.records


class HandlerConsumer:
    """The consumer the message names: a stream handler, invoked in this process."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    def filters(self, function_arn: str, stream_arn: str) -> list[Any]:
        return []

    def invoke(self, function_arn: str, event: dict[str, Any]) -> list[str]:
        failures = self.handler(event, LambdaContext("AggregatorFunction"))["batchItemFailures"]
        return [str(failure["itemIdentifier"]) for failure in failures]


def test_the_head_follows_departures_from_the_top_and_refills_from_the_index(
    service: Services,
    store: Database,
    local_tables: Settings,
    dynamodb_client: Any,
    dynamodb_endpoint: str,
) -> None:
    # Given a board of 140 members whose head the stream keeps
    board = unique_id("head")
    service.boards.put_board(board, board_request({"shards": 4}))
    aggregator = Aggregator(store, service.boards.settings, service.clock)
    stream = Stream(dynamodb_client, dynamodb_endpoint, local_tables.table_name, board)
    for index in range(140):
        service.members.put_member(board, f"m{index:03d}", member_request({"score": Decimal(index)}))
    stream.fetch()
    deliver(aggregator, stream.take(len(stream.pending)))
    head = store.structures.get_head(board, "all")
    assert head is not None
    assert len(head.keys) == 128

    # When the 60 best members leave and others climb
    for index in range(80, 140):
        service.members.delete_member(board, f"m{index:03d}")
    service.members.submit_score(board, "m000", Decimal(1000))
    stream.fetch()
    deliver(aggregator, stream.take(len(stream.pending)))

    # Then the head was refilled, and its pages are the index's
    head = store.structures.get_head(board, "all")
    assert head is not None
    assert head.complete
    assert len(head.keys) == 80
    top = service.reads.top(board, 100, None, False)
    assert [e.member_id for e in top.entries][:2] == ["m000", "m079"]
    assert top.entries == service.reads.top(board, 100, None, False, consistent=True).entries
    assert top.next_cursor is None
    assert top.total == 80
    # and the tree lost the same members
    assert len(assert_tree_counts_the_index(store, board)) == 80


def test_a_rebuild_from_the_index_gives_a_tree_with_the_score_items_versions_and_a_head(
    service: Services,
    store: Database,
    dynamodb_client: Any,
    dynamodb_endpoint: str,
    local_tables: Settings,
) -> None:
    # Given a board whose scores were written without a stream consumer (a bulk load),
    # whose tree has an older shape (built with small nodes)
    board = unique_id("rebuilt")
    service.boards.put_board(board, board_request({"shards": 5, "tieBreak": "earliest", "order": "asc"}))
    rng = random.Random(11)
    scores = {f"r{i:02d}": Decimal(rng.randrange(40)) / 4 for i in range(90)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score}))
    for member in rng.sample(sorted(scores), 20):
        scores[member] += 1
        service.members.submit_score(board, member, Decimal(1))
    found = store.members.versions(board, sorted(scores), ALL_TIME, consistent=True)
    with small_nodes(3, 3):  # and each node written 50 times since
        old_shape = treebuild.build({m: Entry(str(k), v) for m, (k, v) in found.items()}, sv=50)
    store.tree.put_nodes(board, ALL_TIME, old_shape, None)

    old = store.tree.all_nodes(board, ALL_TIME)

    # When the head and the tree are rebuilt
    nodes = service.maintenance.rebuild_rank_structures(board)

    # Then the tree is the index's, in nodes of the usual size (none of the older shape is
    # left), each entry at the version its score item has; the head is the index's
    listed = assert_tree_counts_the_index(store, board)
    assert len(listed) == 90
    versions = store.members.versions(board, sorted(scores), ALL_TIME, consistent=True)
    usual = treebuild.build({m: Entry(str(k), v) for m, (k, v) in versions.items()})
    assert nodes == len(store.tree.all_nodes(board, ALL_TIME)) == len(usual)
    held = {
        m: e
        for n in store.tree.all_nodes(board, ALL_TIME)
        if isinstance(n, Leaf)
        for m, e in n.entries.items()
    }
    assert {m: (e.key, e.version) for m, e in held.items()} == versions
    # and a report of a node of the old tree, still in flight, is refused by the new one
    # (every node starts above the old ones' state versions)
    root = next(n for n in store.tree.all_nodes(board, ALL_TIME) if n.root)
    assert isinstance(root, Inner)
    stale = {max(root.children): Count(0, max(n.sv for n in old))}
    assert store.tree.report(board, ALL_TIME, ROOT, root.level, stale)[0] is False
    assert service.reads.top(board, 100, None, False) == service.reads.top(
        board, 100, None, False, consistent=True
    )
    with pytest.raises(NotFound):
        service.reads.rank(board, "nobody")

    # When a member's score changes, and the aggregator applies its record
    stream = Stream(dynamodb_client, dynamodb_endpoint, local_tables.table_name, board)
    member = sorted(scores)[0]
    service.members.submit_score(board, member, Decimal(100))
    stream.fetch()
    deliver(Aggregator(store, service.boards.settings, service.clock), stream.take(len(stream.pending)))

    # Then the record found the entry its predecessor left: the member moved, leaving no
    # tombstone anywhere (a record out of order would)
    assert_tree_counts_the_index(store, board)
    leaves = [n for n in store.tree.all_nodes(board, ALL_TIME) if isinstance(n, Leaf)]
    assert not any(leaf.tombstones for leaf in leaves)


# -- what it costs ------------------------------------------------------------------------


class NoProgress:
    def update(self, count: int) -> None:
        pass


def test_what_a_build_and_the_aggregators_records_cost_on_a_board_of_5000(
    store: Database,
    metered: Metered,
    local_tables: Settings,
    dynamodb_client: Any,
    dynamodb_endpoint: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given 5,000 members on 10 shards, loaded in bulk with the service's own items (no
    # stream consumer ran: the bench's load, bench.load)
    service = Services(store, clock=TickingClock())
    board = unique_id("costed")
    service.boards.put_board(board, board_request({"shards": 10}))
    population = Population()
    population.grow(5000)
    grow_board(
        dynamodb_client, store, board, service.boards.settings(board), population, 0, 5000, NoProgress()
    )

    # When its head and tree are built, on a client whose every request is recorded
    with metered.recorder.window() as window:
        nodes = metered.service.maintenance.rebuild_rank_structures(board)
    build = Sample.of(window)

    # Then the tree counts like the index, and the build read the index once and each
    # member's score item once (0.5 RCU: BatchGetItem, eventually consistent, items under
    # 4 KB), and wrote each node once (items of at most 2 KB: 2 WCU)
    listed = assert_tree_counts_the_index(store, board)
    assert len(listed) == 5000
    assert build.rcu <= 5000 * 0.5 + 5000 * 200 / 4096 * 0.5 + 20
    assert build.wcu <= 2 * nodes + 10

    # When members move, join and leave, and the aggregator (on the recorded client)
    # applies each of their score records, and the redrive replays some of them
    stream = Stream(dynamodb_client, dynamodb_endpoint, local_tables.table_name, board)
    draw = random.Random(50)
    members = [member_id(i) for i in range(5000)]
    for member in draw.sample(members, 120):
        service.members.submit_score(board, member, Decimal(draw.randrange(10**7)))
    for index in range(5000, 5060):
        service.members.put_member(board, member_id(index), member_request({"score": Decimal(index)}))
    for member in draw.sample(members, 60):
        service.members.delete_member(board, member)
    stream.fetch()
    aggregator = Aggregator(metered.service.db, metered.service.boards.settings, metered.service.clock)
    kinds = {"MODIFY": "a score changed", "INSERT": "a member joining", "REMOVE": "a member leaving"}
    costs: dict[str, list[Sample]] = {}
    records = stream.take(len(stream.pending))
    for record in records:
        kind = kinds[record["eventName"]] if record["dynamodb"]["Keys"]["sk"]["S"] == "SCORE#all" else None
        with metered.recorder.window() as window:
            aggregator.apply(record)
        if kind is not None:
            costs.setdefault(kind, []).append(Sample.of(window))
    for record in draw.sample([r for r in records if r["eventName"] == "MODIFY"], 20):
        with metered.recorder.window() as window:
            aggregator.apply(record, replayed=True)
        costs.setdefault("a record replayed (the redrive's)", []).append(Sample.of(window))

    # Then the tree still counts like the index, and no record wrote more than two leaves
    # and a report a level on each side up to the root (items of at most 2 KB: 2 WCU each),
    # and a split (a transaction of three such items, billed twice)
    listed = assert_tree_counts_the_index(store, board)
    assert len(listed) == 5000
    height = max(node.level for node in store.tree.all_nodes(board, ALL_TIME))
    assert all(s.wcu <= 2 * (2 + 2 * height) + 3 * 2 * 2 for kind in kinds.values() for s in costs[kind])
    with capsys.disabled():
        print(f"\nbuilding the count tree of 5,000 members on 10 shards ({nodes} nodes, height {height}):")
        print(f"  {build.rcu:.1f} RCU, {build.wcu:.1f} WCU, {build.requests} requests")
        print("the aggregator's score records, as it applies each to the tree (the head aside):")
        for kind, samples in costs.items():
            wcu = [s.wcu for s in samples]
            rcu = [s.rcu for s in samples]
            print(
                f"  {kind}: {sum(wcu) / len(wcu):.2f} WCU on average, {max(wcu)} at most; "
                f"{sum(rcu) / len(rcu):.2f} RCU on average, {max(rcu)} at most ({len(samples)} records)"
            )
