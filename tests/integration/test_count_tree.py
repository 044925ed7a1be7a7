"""The count tree on DynamoDB Local (podium.dal.tree under podium.treekeeper and
podium.treereads): a random history applied by four consumers at once, with redeliveries
and late replays, splits included, against a plain sorted list; and what its reads and
writes cost, as DynamoDB Local bills them (``bench.measure``), on a tree of 5,000 members."""

from __future__ import annotations

import random
import threading
import zlib
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from botocore.config import Config

from bench.measure import Recorder, Sample
from podium import counttree, treebuild
from podium.config import Settings
from podium.counttree import (
    Change,
    Count,
    Entry,
    Inner,
    InOrder,
    Leaf,
    LeafWrite,
    Node,
    NodeId,
    Put,
    Tombstone,
    Version,
)
from podium.dal import schema
from podium.dal.client import Tables
from podium.dal.tree import CountTree, tree_node_from_item
from podium.ports import TreeStore
from podium.treekeeper import Tree, TreeKeeper
from podium.treereads import TreeReader
from tests.helpers import unique_id
from tests.treestore import MemoryTree, assert_counts_converged, small_nodes

pytestmark = pytest.mark.integration

NOW = 1_900_000_000
CONSUMERS = 4


@pytest.fixture
def tree_store(local_tables: Settings, dynamodb_client: Any) -> CountTree:
    return CountTree(Tables(local_tables, dynamodb_client))


def key(score: int, member: str) -> str:
    return f"{score:06d}#{member}"


def stored_items(store: CountTree, board: str, period: str = "all") -> list[dict[str, Any]]:
    """Every item under the tree's partition keys (raw queries)."""
    items: list[dict[str, Any]] = []
    for pk in schema.tree_pks(board, period):
        request = {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ConsistentRead": True,
        }
        items += store.tables.query_items(request)
    return items


def stored_nodes(store: CountTree, board: str, period: str = "all") -> list[Node]:
    return [tree_node_from_item(item) for item in stored_items(store, board, period)]


def assert_every_member_once_at_its_newest_key(nodes: list[Node], newest: dict[str, str]) -> None:
    placed: dict[str, list[str]] = {}
    for node in nodes:
        if isinstance(node, Leaf):
            for member, entry in node.entries.items():
                assert counttree.holds(node, entry.key)
                placed.setdefault(member, []).append(entry.key)
    assert placed == {member: [k] for member, k in newest.items()}


@dataclass(frozen=True)
class Record:
    old: str | None
    new: str | None
    version: Version
    gone: bool = False  # the score item deleted

    def change(self, member: str) -> Change:
        return Change(member, self.old, self.new, self.version, NOW)


def history(member: str, draw: random.Random) -> list[Record]:
    """A member's records: it joins, moves a few times (now and then leaving, or deleted
    and created again in a new incarnation)."""
    records: list[Record] = []
    incarnation, version, current = 1, 0, None
    for _ in range(draw.randint(1, 5)):
        roll = draw.random()
        if current is not None and roll < 0.1:  # deleted: its next write creates it again
            records.append(Record(current, None, (incarnation, version + 1), gone=True))
            incarnation, version, current = incarnation + 1, 0, None
            continue
        new = None if current is not None and roll < 0.2 else key(draw.randrange(1000), member)
        version += 1
        records.append(Record(current, new, (incarnation, version)))
        current = new
    return records


@small_nodes(4, 4)  # a few hundred members split leaves, inner nodes and the root many times
def test_four_consumers_with_redeliveries_and_late_replays_count_like_a_sorted_list(
    tree_store: CountTree,
) -> None:
    # Given a few hundred members' histories, each consumer the stream of its own members
    draw = random.Random(20261122)
    board = unique_id("tree")
    tree = Tree(board, "all")
    records = {f"m{i:03d}": history(f"m{i:03d}", draw) for i in range(200)}
    members = sorted(records)
    # one record held back (its batch given up) and one applied record, both replayed late
    held = next(m for m in members if len(records[m]) >= 3)
    late = [(held, records[held][1]), (held, records[held][0])]

    def consume(mine: list[str], seed: int) -> None:
        local = random.Random(seed)
        keeper = TreeKeeper(tree_store)
        cursor = dict.fromkeys(mine, 0)
        while left := [m for m in mine if cursor[m] < len(records[m])]:
            member = local.choice(left)
            index = cursor[member]
            if (member, records[member][index]) != late[0]:
                keeper.apply(tree, records[member][index].change(member))
            # now and then the batch is delivered again, from a record or two before
            cursor[member] = local.randint(max(0, index - 2), index) if local.random() < 0.1 else index + 1

    # When four consumers apply them at once, and the redrive replays the late records after
    # (the member's score item is at its last record by then)
    together([lambda i=i: consume(members[i::CONSUMERS], i) for i in range(CONSUMERS)])  # type: ignore[misc]
    last = records[held][-1]
    for member, record in late:
        TreeKeeper(tree_store).apply(tree, record.change(member), lambda: None if last.gone else last.version)

    # Then every member is in one leaf, once, at its newest key, every inner node counts its
    # children, and the members below each of many bounds are the sorted list's, read all
    # at once (several BatchGetItems), one by one, and strongly consistent
    newest = {m: r[-1].new for m, r in records.items() if r[-1].new is not None}
    nodes = stored_nodes(tree_store, board)
    assert max(node.level for node in nodes) >= 3  # splits on every level
    assert_every_member_once_at_its_newest_key(nodes, newest)
    assert_counts_converged(nodes)
    ordered = sorted(newest.values())
    bounds = sorted({key(draw.randrange(1001), f"m{draw.randrange(200):03d}") for _ in range(250)})
    expected = [bisect_left(ordered, bound) for bound in bounds]
    reader = TreeReader(tree_store)
    assert reader.count_below(board, "all", bounds) == expected
    assert [reader.count_below(board, "all", [b])[0] for b in bounds[:20]] == expected[:20]
    assert TreeReader(tree_store).count_below(board, "all", bounds, consistent=True) == expected


def together(bodies: list[Callable[[], None]]) -> None:
    """Run the bodies in threads of their own, at once; raise what any of them raised."""
    errors: list[BaseException] = []

    def run(body: Callable[[], None]) -> None:
        try:
            body()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def test_the_dynamodb_store_answers_every_request_as_the_protocol_says(tree_store: CountTree) -> None:
    # Given the same small tree in DynamoDB Local and in the in-memory model of the protocol
    draw = random.Random(7)
    board = unique_id("stores")
    model = MemoryTree()
    with small_nodes(4, 3):
        nodes = treebuild.build({f"m{i}": Entry(key(i * 10, f"m{i}"), (1, 1)) for i in range(20)})
    for store in (tree_store, model):
        store.put_nodes(board, "all", nodes, None)

    # When the same random requests go to both: leaf writes on conditions met and not met,
    # reports over older and newer counts, of children there and not, splits, reads
    for step in range(400):
        request = random_request(draw, model.nodes(board, "all"))
        # Then both answer alike
        assert request(tree_store, board) == request(model, board), step

    # and they hold the same nodes
    assert {counttree.ident(n): n for n in stored_nodes(tree_store, board)} == model.nodes(board, "all")


Request = Callable[[TreeStore, str], object]


def random_request(draw: random.Random, nodes: dict[NodeId, Node]) -> Request:
    kind = draw.choice(["leaf", "leaf", "leaf", "joint", "report", "report", "split", "read"])
    if kind == "leaf":
        return random_leaf_write(draw, nodes)
    if kind == "joint":
        return random_joint_write(draw, nodes)
    if kind == "report":
        return random_report(draw, nodes)
    if kind == "split":
        return random_split(draw, nodes)
    ids = [*draw.sample(sorted(nodes), min(3, len(nodes))), (0, "nowhere")]
    return lambda store, board: store.read_nodes(board, "all", ids, consistent=True)


def random_leaf_write(draw: random.Random, nodes: dict[NodeId, Node]) -> Request:
    node_id = draw.choice(sorted(nodes))
    node = nodes[node_id]
    leaf = node if isinstance(node, Leaf) else Leaf("", None, node.sv)  # an inner node refuses
    member = draw.choice([*leaf.entries, *leaf.tombstones, f"m{draw.randrange(30)}"])
    version = (1, draw.randint(1, 4))
    entry = draw.choice([None, Entry(key(draw.randrange(300), member), version)])
    stone = draw.choice([None, Tombstone(version, NOW + draw.randint(-9, 9))])
    others = sorted(m for m in leaf.tombstones if m != member)
    drop = tuple(draw.sample(others, draw.randint(0, len(others))))
    expectations: list[InOrder | int] = [
        leaf.sv,
        leaf.sv + 1,
        InOrder(leaf.entries.get(member), draw.choice([None, key(draw.randrange(300), member)])),
        InOrder(Entry(key(draw.randrange(300), member), version), None),
        InOrder(None, key(draw.randrange(300), member)),
    ]
    expect = draw.choice(expectations)
    write = LeafWrite(node_id, member, entry, stone, expect, drop)
    return lambda store, board: store.write_leaf(board, "all", write)


def random_joint_write(draw: random.Random, nodes: dict[NodeId, Node]) -> Request:
    """Writes of two to four members to one leaf, each on its own condition (as the keeper
    sends a batch's lone records: no tombstones dropped)."""
    node_id = draw.choice(sorted(nodes))
    node = nodes[node_id]
    leaf = node if isinstance(node, Leaf) else Leaf("", None, node.sv)
    known = sorted({*leaf.entries, *leaf.tombstones, *(f"m{i}" for i in range(30))})
    writes = []
    for member in draw.sample(known, draw.randint(2, 4)):
        version = (1, draw.randint(1, 4))
        entry = draw.choice([None, Entry(key(draw.randrange(300), member), version)])
        stone = draw.choice([None, Tombstone(version, NOW + draw.randint(-9, 9))])
        expect = draw.choice(
            [
                InOrder(leaf.entries.get(member), draw.choice([None, key(draw.randrange(300), member)])),
                InOrder(Entry(key(draw.randrange(300), member), version), None),
                InOrder(None, key(draw.randrange(300), member)),
            ]
        )
        writes.append(LeafWrite(node_id, member, entry, stone, expect))
    return lambda store, board: store.write_leaf_jointly(board, "all", writes)


def random_report(draw: random.Random, nodes: dict[NodeId, Node]) -> Request:
    inner = [n for n in nodes.values() if isinstance(n, Inner)]
    node = draw.choice(inner)
    level = node.level if draw.random() < 0.8 else node.level + 1
    los = draw.sample(sorted(node.children), draw.randint(1, len(node.children)))
    counts = {lo: Count(draw.randrange(9), node.children[lo].sv + draw.choice([-1, 0, 1, 2])) for lo in los}
    if draw.random() < 0.1:
        counts["nowhere"] = Count(1, 1)
    return lambda store, board: store.report(board, "all", counttree.ident(node), level, counts)


def random_split(draw: random.Random, nodes: dict[NodeId, Node]) -> Request:
    chosen = draw.sample(sorted(nodes), min(2, len(nodes)))
    puts = [
        Put(replace(nodes[i], sv=nodes[i].sv + 1), nodes[i].sv + draw.choice([0, 0, 0, 1])) for i in chosen
    ]
    fresh = Leaf(f"{draw.randrange(1000):06d}", None, 1, {}, {})
    puts.append(Put(fresh, None) if draw.random() < 0.8 else Put(nodes[chosen[0]], None))
    return lambda store, board: store.replace(board, "all", puts, None)


# -- what it costs ---------------------------------------------------------------------------


class Metered:
    """The tree on a client whose every request is recorded."""

    def __init__(self, endpoint: str, settings: Settings) -> None:
        import boto3

        client = boto3.client("dynamodb", endpoint_url=endpoint, config=Config(max_pool_connections=64))
        self.recorder = Recorder()
        self.recorder.attach(client)
        self.store = CountTree(Tables(settings, client))


@pytest.fixture
def metered(dynamodb_endpoint: str, local_tables: Settings) -> Metered:
    return Metered(dynamodb_endpoint, local_tables)


def test_a_tree_of_5000_members_reads_a_rank_and_100_ranks_within_the_bound(
    metered: Metered, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a tree of 5,000 members, built from their keys, and then kept by the stream
    draw = random.Random(5000)
    board = unique_id("tree5k")
    tree = Tree(board, "all")
    current = {f"p{i:05d}": key(draw.randrange(1_000_000), f"p{i:05d}") for i in range(5000)}
    entries = {m: Entry(k, (1, 1)) for m, k in current.items()}
    metered.store.put_nodes(board, "all", treebuild.build(entries), None)
    keeper, reader = TreeKeeper(metered.store), TreeReader(metered.store)
    versions = dict.fromkeys(current, 1)
    bound = current["p00042"]
    bounds = sorted(draw.sample(sorted(current.values()), 100))

    # When one rank's count is read, then 100 ranks' at once, by a reader that has not seen
    # the tree yet (a function's first read), and again once it has
    read: dict[str, Sample] = {}
    for when in ("cold", "warm"):
        if when == "warm":  # it has read ranks all over the board
            reader.count_below(board, "all", [key(s, "") for s in range(0, 1_000_000, 2_000)])
        counting = reader if when == "warm" else TreeReader(metered.store)
        with metered.recorder.window() as window:
            one = counting.count_below(board, "all", [bound])
        read[f"{when}: one rank"] = Sample.of(window)
        counting = reader if when == "warm" else TreeReader(metered.store)
        with metered.recorder.window() as window:
            hundred = counting.count_below(board, "all", bounds)
        read[f"{when}: 100 ranks"] = Sample.of(window)

    # and records of each kind are applied: moves within a leaf, between leaves, members
    # joining and leaving
    writes: dict[str, list[float]] = {}

    def apply(kind: str, member: str, new: str | None) -> None:
        old = current.get(member)
        versions[member] = versions.get(member, 0) + 1
        change = Change(member, old, new, (1, versions[member]), NOW)
        with metered.recorder.window() as window:
            keeper.apply(tree, change)
        writes.setdefault(kind, []).append(Sample.of(window).wcu)
        if new is None:
            current.pop(member)
        else:
            current[member] = new

    keeper.apply(tree, Change("p00000", current["p00000"], None, (1, 2), NOW))  # it has seen the shape
    current.pop("p00000")
    for step in range(240):
        member = draw.choice(sorted(current))
        score = int(current[member][:6])
        kind = ("within a leaf", "between leaves", "joining", "leaving")[step % 4]
        if kind == "within a leaf":
            apply(kind, member, key(score + 1, member))
        elif kind == "between leaves":
            apply(kind, member, key((score + 500_000) % 1_000_000, member))
        elif kind == "joining":
            joining = f"q{step:05d}"
            apply(kind, joining, key(draw.randrange(1_000_000), joining))
        else:
            apply(kind, member, None)

    # Then the counts are the sorted list's, and 100 ranks read within the bound of 500 RCU
    ordered = sorted(entries[m].key for m in entries)
    assert one == [bisect_left(ordered, bound)]
    assert hundred == [bisect_left(ordered, b) for b in bounds]
    assert read["cold: 100 ranks"].rcu < 500
    assert read["warm: 100 ranks"].rcu < 500
    now_ordered = sorted(current.values())
    assert reader.count_below(board, "all", bounds, consistent=True) == [
        bisect_left(now_ordered, b) for b in bounds
    ]
    height = max(node.level for node in stored_nodes(metered.store, board))
    with capsys.disabled():
        print(f"\nthe count tree of 5,000 members (height {height}):")
        for what, sample in read.items():
            print(f"  {what}: {sample.rcu} RCU ({sample.requests} requests, {sample.items_read} items)")
        for kind, units in writes.items():
            print(f"  a record {kind}: {sum(units) / len(units):.2f} WCU on average, {max(units)} at most")


def moves(members: int, draw: random.Random) -> tuple[list[tuple[str, Record]], dict[str, str]]:
    """Each member joins, then moves once or twice: the records in a shuffled order that
    keeps each member's own, and every member's newest key."""
    per_member: dict[str, list[Record]] = {}
    for i in range(members):
        member, current, records = f"m{i:03d}", None, []
        for version in range(1, draw.randint(2, 3) + 1):
            new = key(draw.randrange(1000), member)
            records.append(Record(current, new, (1, version)))
            current = new
        per_member[member] = records
    order = [m for m, records in per_member.items() for _ in records]
    draw.shuffle(order)
    cursor = dict.fromkeys(per_member, 0)
    applied = []
    for member in order:
        applied.append((member, per_member[member][cursor[member]]))
        cursor[member] += 1
    return applied, {m: str(records[-1].new) for m, records in per_member.items()}


def assert_counts_like(reader: TreeReader, board: str, newest: dict[str, str], draw: random.Random) -> None:
    ordered = sorted(newest.values())
    bounds = sorted({key(draw.randrange(1001), f"m{draw.randrange(200):03d}") for _ in range(120)})
    assert reader.count_below(board, "all", bounds) == [bisect_left(ordered, b) for b in bounds]


@small_nodes(4, 4)
def test_a_tree_grown_with_splits_lies_under_many_partition_keys_and_counts_like_a_sorted_list(
    tree_store: CountTree,
) -> None:
    # Given a new tree, and 150 members joining and moving
    draw = random.Random(15)
    board = unique_id("spread")
    records, newest = moves(150, draw)

    # When a consumer applies their records (leaves, inner nodes and the root split)
    keeper = TreeKeeper(tree_store)
    for member, record in records:
        keeper.apply(Tree(board, "all"), record.change(member))

    # Then the root stays at its fixed key, every other node lies under the partition key
    # its sort key hashes to, and the nodes take many of them
    items = stored_items(tree_store, board)
    root = next(item for item in items if item["sk"]["S"] == schema.TREE_ROOT)
    assert root["pk"]["S"] == schema.tree_pk(board, "all")
    others = [item for item in items if item is not root]
    for item in others:
        part = zlib.crc32(item["sk"]["S"].encode()) % schema.TREE_SPREAD
        assert item["pk"]["S"] == schema.tree_part_pk(board, "all", part)
    assert len({item["pk"]["S"] for item in others}) >= 20
    nodes = stored_nodes(tree_store, board)
    assert max(node.level for node in nodes) >= 3
    assert_every_member_once_at_its_newest_key(nodes, newest)
    assert_counts_converged(nodes)
    # and ranks read across the partition keys (one BatchGetItem a level) are a sorted list's
    assert_counts_like(TreeReader(tree_store), board, newest, draw)
    assert_counts_like(TreeReader(CountTree(tree_store.tables)), board, newest, draw)
    assert len(tree_store.all_nodes(board, "all")) == len(nodes)


@small_nodes(4, 4)
def test_a_reader_and_a_keeper_go_on_exactly_after_another_process_rebuilds_the_tree(
    tree_store: CountTree,
) -> None:
    # Given a tree grown with splits, and a reader and a keeper that have read its shape
    draw = random.Random(16)
    board = unique_id("rebuilt")
    records, newest = moves(120, draw)
    keeper = TreeKeeper(tree_store)
    for member, record in records:
        keeper.apply(Tree(board, "all"), record.change(member))
    reader = TreeReader(tree_store)
    assert_counts_like(reader, board, newest, draw)
    items = stored_items(tree_store, board)

    # When another process rebuilds it (a rebuild drops every node, then puts the build)
    rebuilder = CountTree(tree_store.tables)
    entries = {
        m: e
        for node in tree_store.all_nodes(board, "all")
        if isinstance(node, Leaf)
        for m, e in node.entries.items()
    }
    assert rebuilder.drop(board, "all") == len(items)
    rebuilder.put_nodes(board, "all", treebuild.build(entries, sv=1_000_000), None)

    # Then the reader and the keeper that knew the old shape read and write the new one:
    # their reads find nothing where they looked, and start again from the root
    rebuilt = stored_items(tree_store, board)
    assert [i["sk"]["S"] for i in rebuilt if i["pk"]["S"] == schema.tree_pk(board, "all")] == [
        schema.TREE_ROOT
    ]
    assert_counts_like(reader, board, newest, draw)
    later, _ = moves(120, random.Random(17))
    for member, record in later:
        if record.version == (1, 3):  # versions past every one the tree holds
            keeper.apply(Tree(board, "all"), Change(member, newest[member], record.new, (1, 4), NOW))
            newest[member] = str(record.new)
    assert_every_member_once_at_its_newest_key(stored_nodes(tree_store, board), newest)
    assert_counts_like(reader, board, newest, draw)
    assert_counts_like(TreeReader(CountTree(tree_store.tables)), board, newest, draw)
    assert_found_by_a_store_that_has_not_read_the_root(tree_store, board)


def assert_found_by_a_store_that_has_not_read_the_root(tree_store: CountTree, board: str) -> None:
    """A store that has not seen the tree's root finds every node by its id alone."""
    nodes = [node for node in stored_nodes(tree_store, board) if not node.root]
    ids = [counttree.ident(node) for node in nodes]
    found = CountTree(tree_store.tables).read_nodes(board, "all", ids, consistent=True)
    assert found == dict(zip(ids, nodes, strict=True))
