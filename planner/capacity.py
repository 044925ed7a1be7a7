"""The capacity arithmetic of a Podium board, from DynamoDB's published limits.

Everything here is pure: a :class:`Workload` and :class:`Prices` in, a :class:`Plan` out.
The constants are the figures the plan rests on. Those marked *estimate* are Podium's
design figures, not AWS's; docs/capacity.md says where each comes from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# -- DynamoDB's published limits and unit sizes ----------------------------------------
PARTITION_WCU_PER_S = 1_000  # write units a second one partition (one partition key) takes
PARTITION_RCU_PER_S = 3_000  # read units a second one partition serves
WRITE_UNIT_BYTES = 1_024  # one WCU writes up to 1 KB
READ_UNIT_BYTES = 4_096  # one RCU reads up to 4 KB strongly consistent, twice that eventually
EVENTUAL_READ_FACTOR = 0.5  # an eventually consistent read costs half
ITEM_OVERHEAD_BYTES = 100  # storage DynamoDB adds to every item and every index entry

# -- The API's limits --------------------------------------------------------------------
MIN_SHARDS = 1
MAX_SHARDS = 100  # `shards` of PUT /boards/{boardId}
HEAD_SERVES_UP_TO = 100  # the largest `limit` the head item answers (podium.head.SERVES_UP_TO)

# -- Podium's costs per operation ------------------------------------------------------
SAFETY_FRACTION = 0.8  # plan each partition to this fraction of its limit
TABLE_WCU_PER_UPDATE = 1  # the score item is written alone and stays under 1 KB
INDEX_WCU_PER_UPDATE = 2  # the index deletes the old entry and puts the new one
# A re-shard's move of one member: its score item keyed in the new index (1 WCU) and that
# index's put (1), then the old key removed (1) and the old index's delete (1);
# `make bench-reshard` measures it (docs/capacity.md, "Re-sharding").
RESHARD_WCU_PER_MEMBER = 4
# The stream consumer's writes for one score change come from a model of the count tree
# (``TreeShape``, ``tree_far_wcu``, ``tree_near_wcu`` below), at the batch the stream
# delivers (``stream_shards``, ``batch_records``). docs/capacity.md, "What a score change
# writes", has the model and the measurements it reproduces.
# the notifier's mark of each score record judged for the leader (under 1 KB), so that a
# record delivered again is not judged again (docs/streams.md)
NOTIFIER_WCU_PER_UPDATE = 1
# estimate: share of score changes that move a key into, out of or within the head and its
# ladder (the top 1,536), each of which rewrites the head item, on a board larger than the
# ladder's reach; on a board within it every change moves a key or a ladder count of the
# head (``head_change_fraction``).
HEAD_CHANGE_FRACTION = 0.1
# estimate: 128 sort keys and 88 ladder samples, compressed (1.8 KB with 14-character
# member ids, 5.9 KB with 36-character UUIDs: `make bench`, docs/benchmarks.md). A board's
# head holds at most that: a smaller board's head holds its keys and the ladder samples it
# has, HEAD_ENTRY_BYTES each (4 KB over 128 + 88 entries) and HEAD_FIXED_BYTES more.
HEAD_ITEM_BYTES = 4_096
HEAD_ENTRY_BYTES = 18
HEAD_FIXED_BYTES = 100
HEAD_LADDER_REACH = 1_536  # podium.head.LADDER_REACH: the ladder samples down to here
# podium.dal.schema.HEAD_COPIES: the head's copies, each on a partition key of its own
# (H#{board}#{copy}), which top reads read instead of the primary head on B#{board}; every
# head write puts the primary and then each copy (1 + copies item writes). The planner
# gives a board as many of them as its reads need (``head_copies``: a quiet board's primary
# alone), at most these.
HEAD_COPIES = 4
INDEX_KEY_BYTES = 100  # estimate: one KEYS_ONLY index entry as a query reads it
# The board item and the period's count, eventually consistent, 0.5 each. An all-time board
# reads no count item (0.5 RCU); the planner counts it for every board, a windowed one's.
VIEW_RCU = 1.0
HEAD_ITEM_RCU = 1.0  # the head item, eventually consistent, up to 8 KB
MEMBER_SCORE_RCU = 0.5  # a member's score item, eventually consistent
# A rank reads the board item and the member's score in one BatchGetItem, strongly
# consistent (it reads a score): 1 RCU each. The board item is on the board's partition.
RANK_VIEW_RCU = 2.0
RANK_BOARD_RCU = 1.0
HEAD_KEYS = 128  # podium.head.CAPACITY: the keys the head holds
LADDER_STEP = 16  # podium.head.LADDER_STEP: positions between two ladder samples
# The count tree (docs/count-tree.md) as a build lays it out: nodes 3/4 full
# (podium.treebuild.BUILD_FILL), a leaf of 20 members at most (podium.counttree.LEAF_MAX),
# an inner node of 32 children (podium.counttree.FANOUT), each under 1 KB (NODE_BYTES). A
# tree grown by inserts holds a little less a node, and may be a level taller.
TREE_LEAF_MEMBERS = 15
TREE_FANOUT = 24
TREE_NODE_RCU = 0.5  # a node stays under 4 KB (split past about 2 KB): one block, eventually consistent
# The partition keys a tree's nodes below the root are spread over (podium.dal.schema.TREE_SPREAD:
# T#{board}#{period}#{n}, n a hash of the node's sort key); the root keeps T#{board}#{period}.
TREE_SPREAD = 64
# The nodes just under the root are the busiest below it, and are hashed like the others:
# the planner counts as many of them on one key as can share one but with a chance under this.
TREE_CROWDING_CHANCE = 0.01


# -- The count tree's writes (docs/capacity.md, "What a score change writes") -------------
@dataclass(frozen=True)
class TreeShape:
    """What the count tree's writes depend on: the entries a leaf holds and the children an
    inner node holds as a build lays them out, and the WCU one write of a node costs."""

    leaf_entries: int
    children: int
    node_wcu: int


# The layout `make bench-treewrites` measured on 2026-11-29 (1,000,000 members, the tree as
# a build lays it out: leaves of 18 entries and inner nodes of 24 children, 3/4 of 24 and 32;
# every node 1 to 2 KB, so 2 WCU a write) and its figures, WCU a record by batch size. The
# model must reproduce them (tests/unit/test_plan.py); the planner does not plan with them.
OLD_TREE = TreeShape(leaf_entries=18, children=24, node_wcu=2)
MEASURED_OLD_FAR_WCU = {1: 16.13, 100: 9.58, 1_000: 6.83}
MEASURED_OLD_NEAR_WCU = {1: 2.50, 100: 2.52, 1_000: 2.56}
# The compact layout the planner plans with (issue 25): every node at most 1 KB, so 1 WCU a
# write, as a build lays them out, TREE_LEAF_MEMBERS and TREE_FANOUT.
# `make bench-treewrites` measures what it costs (docs/capacity.md, "What a score change
# writes"); the model reproduces it within the tests' margin (tests/unit/test_plan.py).
PLANNED_TREE = TreeShape(leaf_entries=TREE_LEAF_MEMBERS, children=TREE_FANOUT, node_wcu=1)
# ... and what `make bench-treewrites` measured on it (2026-11-29, 1,000,000 members loaded
# in bulk, 1,000 updates of each kind, the board checked consistent afterwards), WCU a
# record by batch size: the model must reproduce them too (tests/unit/test_plan.py).
MEASURED_FAR_WCU = {1: 8.72, 100: 5.15, 1_000: 3.63}
MEASURED_NEAR_WCU = {1: 1.27, 100: 1.27, 1_000: 1.32}

# -- The stream's batches (template.yaml: the AggregatorFunction's event source) ----------
STREAM_BATCH_SIZE = 1_000  # BatchSize: the most records one batch holds
STREAM_BATCH_WINDOW_S = 0.0  # MaximumBatchingWindowInSeconds (whole seconds only): none
# Lambda polls each shard of a DynamoDB stream 4 times a second: with no batching window a
# batch holds what reached the shard since the last poll (more when the consumer is still
# busy with the previous batch: the planner counts the smallest batch, the dearest).
STREAM_POLL_S = 0.25
STREAM_GATHER_S = max(STREAM_BATCH_WINDOW_S, STREAM_POLL_S)  # how long a shard gathers a batch
# A table's stream has about one shard per table partition, and a partition takes
# PARTITION_WCU_PER_S. Only the score items (1 WCU a change), the event log and the profiles
# are on the streamed table: the derived items (count tree, heads, counts, marks, leader,
# inbox) are on a second table without a stream, so their writes make no stream shards.

# -- What each function instance keeps (podium.recent; docs/capacity.md, "Hot boards") ------
READ_CACHE_SECONDS = 1.0  # the template's ReadCacheSeconds: the board, count, tree root
HEAD_KEEP_SECONDS = 0.25  # podium.recent: the head (with the board and count) at most this
LAYOUT_CACHE_SECONDS = 5.0  # LAYOUT_CACHE_SECONDS: a board's layout, read strongly consistent
LAYOUT_RCU = 1.0  # the board item, strongly consistent
# estimate: how long a warm instance takes over one request (Lambda bills it by the ms);
# how many instances a read rate keeps busy is rate x this. A top page from a kept head
# makes no DynamoDB request; a rank makes two round trips (its score, then the tree's path).
TOP_READ_MS = 10.0
RANK_READ_MS = 20.0
WRITE_MS = 25.0  # a score update: the layout kept, one conditional write
STREAM_MS_PER_UPDATE = 2.0  # each of the two stream consumers, per record, batched

# -- The event log (docs/event-log.md) --------------------------------------------------
EVENT_WCU = 7  # insert 2 + mark 2 + delete 1 on its bucket, + 2 for the eventId claim
EVENT_RCU = 1  # the fold's consistent read of the log
EVENT_BUCKETS = 64  # podium.store.EVENT_BUCKETS
EVENT_BUCKET_WCU = 5  # of EVENT_WCU, the units on the event's own bucket partition
# LogIndex (docs/periods.md): an event's entry is put when it is logged and removed when it
# is folded, on one of EVENT_BUCKETS keys of its board and period (all its members' events)
LOG_INDEX_WCU_PER_EVENT = 2

# -- Prices: us-east-1, on-demand, Standard table class, USD ----------------------------
PRICE_REGION = "us-east-1"
PRICE_DATE = "2024-11-01"  # the on-demand price cut; list prices unchanged since, as of 2026-11
WRITE_PRICE_PER_MILLION = 0.625  # per million write request units
READ_PRICE_PER_MILLION = 0.125  # per million read request units
STORAGE_PRICE_PER_GB_MONTH = 0.25  # per GB-month (the first 25 GB free a month are ignored)
CACHE_PRICE_PER_HOUR = 0.020  # API Gateway stage cache of 0.5 GB, per hour
# AWS WAF (the template's CallerRateLimit: per-caller limits on the REST API's stage), us-east-1
# list prices: a web ACL a month, a rule a month, a million requests it inspects.
WAF_WEB_ACL_PER_MONTH = 5.00
WAF_RULE_PER_MONTH = 1.00
WAF_PER_MILLION_REQUESTS = 0.60
SECONDS_PER_MONTH = 730 * 3_600  # AWS bills a month as 730 hours
BYTES_PER_GB = 1_000_000_000

# -- Storage per member (estimates, for ids of about 16 characters) -----------------------
PROFILE_ITEM_BYTES = 100  # keys, createdAt, updatedAt; `data` comes on top
SCORE_ITEM_BYTES = 150  # keys, s, v, t, rpk, rsk
INDEX_ENTRY_BYTES = 115  # the table's keys and the index's keys


@dataclass(frozen=True)
class Workload:
    """What one board must sustain."""

    writes_per_s: float  # score updates a second
    top_reads_per_s: float
    rank_reads_per_s: float
    members: int
    k: int = 10  # the `limit` of a top read
    data_bytes: int = 200  # a member's `data`, serialised
    events_per_s: float = 0.0  # events logged through POST .../events (with an eventId)
    shards: int | None = None  # None: the planner picks
    head: bool = True  # top reads may come from the head item (not consistent=true)
    cache_ttl_s: float = 0.0  # TopCacheTtlSeconds
    cached_pages: int = 10  # distinct top pages (cache keys) being read
    safety: float = SAFETY_FRACTION
    read_cache_s: float = READ_CACHE_SECONDS  # ReadCacheSeconds (0: every read reads the board)
    # of the score updates, the share that leave the member in its leaf of the count tree
    # (small increments on a big board); the rest move far (``tree_far_wcu``)
    near_moves: float = 0.0
    # score changes a second of all the boards whose records share the table's stream, which
    # sets its shards and so the board's batches (None: this board's alone)
    table_writes_per_s: float | None = None
    # warm instances serving this board's reads, each keeping its own copies (None: as many
    # as the board's own reads keep busy; many boards share the instances of all their reads)
    instances: float | None = None


def stream_wcu_per_update(near_moves: float, far_wcu: float, near_wcu: float) -> float:
    """What the stream consumers write for a score update, when ``near_moves`` of them
    stay in their leaf of the count tree (``near_wcu`` each) and the rest move far
    (``far_wcu``): the aggregator's share and the notifier's mark."""
    tree = near_moves * near_wcu + (1 - near_moves) * far_wcu
    return tree + NOTIFIER_WCU_PER_UPDATE


@dataclass(frozen=True)
class Prices:
    write_per_million: float = WRITE_PRICE_PER_MILLION
    read_per_million: float = READ_PRICE_PER_MILLION
    storage_per_gb_month: float = STORAGE_PRICE_PER_GB_MONTH
    cache_per_hour: float = CACHE_PRICE_PER_HOUR
    waf_web_acl_per_month: float = WAF_WEB_ACL_PER_MONTH
    waf_rule_per_month: float = WAF_RULE_PER_MONTH
    waf_per_million_requests: float = WAF_PER_MILLION_REQUESTS


@dataclass(frozen=True)
class Upkeep:
    """What keeping a board costs its stream consumers, at the batches its stream delivers."""

    streamed_wcu: float  # WCU/s of the table with the stream: score items and the event log
    stream_shards: int
    batch_records: float  # the board's records in one batch of the aggregator
    tree_far_wcu: float  # the count tree's WCU for one far move in such a batch
    tree_near_wcu: float  # and for one near move
    consumer_wcu: float  # both consumers' WCU a change, for the board's mix: the tree and the mark
    head_writes_per_s: float
    head_item_wcu: int  # one write of the head item (the primary, or a copy)
    head_copies: int  # besides the primary: as many as the board's reads need


@dataclass(frozen=True)
class Plan:
    shards: int
    required_shards: int  # before the 1..100 clamp
    over_capacity: bool  # even 100 shards cannot take the index writes
    max_writes_per_s: float  # score updates a second the chosen shards take within safety
    index_wcu_per_shard: float
    table_wcu: float
    index_wcu: float
    table_rcu: float
    index_rcu: float
    top_rcu_per_read: float
    top_reads_to_dynamodb: float
    rank_rcu_per_read: float
    naive_rank_rcu_per_read: float
    index_rcu_per_shard: float
    board_partition_rcu: float  # reads of B#{board}: board, count, layouts (the head's go to its copies)
    head_item_rcu: float  # the head's reads, over its HEAD_COPIES copies
    read_instances: float  # warm instances the reads keep busy (each keeps its own copies)
    tree_partition_rcu: float  # reads of the count tree's nodes, over all its partition keys
    tree_root_rcu: float  # of those, the root's (T#{board}#{period}): every rank reads it
    tree_spread_rcu: float  # the busiest of the TREE_SPREAD keys below the root
    tree_node_rcu: float  # the busiest node below the root (one of the root's children)
    bytes_per_member: int
    storage_gb: float
    monthly_write_cost: float
    monthly_read_cost: float
    monthly_storage_cost: float
    monthly_cache_cost: float
    upkeep: Upkeep
    far_change_wcu: float  # every write of one far change: item, index, consumers, its share of the head's
    near_change_wcu: float  # the same for a change that stays in its leaf
    top_read_rcu: float  # one top read's RCU on average, with what the instances keep
    rank_read_rcu: float  # one rank's, likewise
    warnings: list[str] = field(default_factory=list)

    @property
    def head_copy_rcu(self) -> float:
        """One copy's share of the head's reads (each copy has a partition key of its own; with
        no copies, the primary's, on the board's partition)."""
        return self.head_item_rcu / max(1, self.upkeep.head_copies)

    @property
    def monthly_cost(self) -> float:
        return (
            self.monthly_write_cost
            + self.monthly_read_cost
            + self.monthly_storage_cost
            + self.monthly_cache_cost
        )


def query_rcu(keys: float, key_bytes: int = INDEX_KEY_BYTES) -> float:
    """Read units of one eventually consistent query returning ``keys`` items: the bytes
    read, rounded up to 4 KB, at half a unit each (a query reads at least one block)."""
    blocks = max(1, math.ceil(math.ceil(keys) * key_bytes / READ_UNIT_BYTES))
    return blocks * EVENTUAL_READ_FACTOR


def required_shards(writes_per_s: float, safety: float = SAFETY_FRACTION) -> int:
    """The fewest shards whose index partitions each take at most ``safety`` of 1,000 WCU/s."""
    return max(MIN_SHARDS, math.ceil(writes_per_s * INDEX_WCU_PER_UPDATE / (safety * PARTITION_WCU_PER_S)))


def max_writes_per_s(shards: int, safety: float = SAFETY_FRACTION) -> float:
    return shards * safety * PARTITION_WCU_PER_S / INDEX_WCU_PER_UPDATE


def hinted_keys(k: int) -> int:
    """The index keys an exact top-k reads when the head's hint steers it: ``k`` and the
    hint's margin (``podium.head.margin``), and up to one ladder step more when the hint
    comes from the ladder (past the head's keys)."""
    keys = k + k // 4 + 1
    return keys + (LADDER_STEP if keys >= HEAD_KEYS else 0)


def top_from_index_rcu(k: int, shards: int) -> float:
    """An exact top-k from the index (``consistent=true``, ``k`` over 100, or a page after a
    cursor): the board, count and head items, then one query per shard that stops at the
    head's hint. A single shard needs no hint: it reads ``k + 1`` keys."""
    keys = k + 1 if shards == 1 else hinted_keys(k)
    return VIEW_RCU + HEAD_ITEM_RCU + shards * query_rcu(keys / shards)


def tree_levels(members: int, leaf: int = TREE_LEAF_MEMBERS, fanout: int = TREE_FANOUT) -> list[int]:
    """The nodes of each level of a board's count tree, from the leaves up to the root
    (leaves of ``leaf`` members, ``fanout`` children a node: the service's layout unless
    told another)."""
    levels = [max(1, math.ceil(members / leaf))]
    while levels[-1] > 1:
        levels.append(math.ceil(levels[-1] / fanout))
    return levels


def distinct_nodes(nodes: int, per_record: float, records: float) -> float:
    """The distinct nodes of a level of ``nodes`` that a batch of ``records`` changes writes,
    each change touching ``per_record`` distinct nodes of the level at random: a batch
    writes a node once however many of its changes touch it, and a node escapes all of them
    with the chance (1 - t/N)^m, so N(1 - (1 - t/N)^m). For a big level that is the
    N(1 - (1 - 1/N)^(t m)) of t m changes spread uniformly over N nodes."""
    if nodes <= 0 or records <= 0:
        return 0.0
    return float(nodes * (1 - (1 - per_record / nodes) ** records))


def far_touches(levels: list[int]) -> list[float]:
    """The distinct nodes of each level (leaves first) that one far move writes: the leaf it
    leaves and the leaf it joins, then on each level above the two nodes on their paths
    until the paths meet; the node where they meet is written once (its children's counts
    change) and the nodes above it not at all (their counts do not). Two random leaves
    share their ancestor on a level of N nodes with the chance 1/N."""
    if len(levels) == 1:
        return [1.0]  # one leaf: the move stays in it
    touches, shared_below = [2.0], 0.0
    for nodes in levels[1:]:
        shared = 1 / nodes
        touches.append(2 * (1 - shared) + (shared - shared_below))
        shared_below = shared
    return touches


def tree_far_wcu(members: int, batch: float, shape: TreeShape = PLANNED_TREE) -> float:
    """The count tree's WCU for one far move (a member that changes leaves), in a batch of
    ``batch`` such moves of one board: the distinct nodes the batch writes on every level,
    shared among its records. Alone (a batch of 1) a move writes its two paths up to where
    they meet; a big batch shares the few nodes of the upper levels."""
    levels = tree_levels(members, shape.leaf_entries, shape.children)
    writes = sum(distinct_nodes(n, t, batch) for n, t in zip(levels, far_touches(levels), strict=True))
    return writes / batch * shape.node_wcu


def tree_near_wcu(members: int, batch: float, shape: TreeShape = PLANNED_TREE) -> float:
    """The count tree's WCU for one near move (a member that stays in its leaf), in a batch of
    ``batch`` of them: its leaf only, as no count changes; a batch writes each leaf once."""
    leaves = tree_levels(members, shape.leaf_entries, shape.children)[0]
    return distinct_nodes(leaves, 1.0, batch) / batch * shape.node_wcu


def stream_shards(streamed_wcu_per_s: float) -> int:
    """The shards of a table's stream: about one per partition of the table, and a partition
    takes 1,000 WCU/s (the table's reads and size can split it further; not counted)."""
    return max(1, math.ceil(streamed_wcu_per_s / PARTITION_WCU_PER_S))


def batch_records(
    board_records_per_s: float,
    table_records_per_s: float,
    shards: int,
    window_s: float = STREAM_GATHER_S,
    most: int = STREAM_BATCH_SIZE,
) -> float:
    """A board's records in one batch of the aggregator: a shard hands over what reached it
    within the time it gathers (``STREAM_GATHER_S``), ``most`` at the most, and the board's
    records are its share of the table's, spread over the shards by key. At least one: a
    quiet board's record arrives alone and is applied alone."""
    if table_records_per_s <= 0:
        return 1.0
    per_batch = min(most, table_records_per_s / shards * window_s)
    return max(1.0, per_batch * board_records_per_s / table_records_per_s)


def head_change_fraction(members: int) -> float:
    """The share of a board's changes that rewrite its head: every change on a board within
    the ladder's reach (it moves a key or a ladder count the head holds), the estimate
    HEAD_CHANGE_FRACTION on a larger one."""
    return 1.0 if members <= HEAD_LADDER_REACH else HEAD_CHANGE_FRACTION


def head_item_wcu(members: int) -> int:
    """WCU of one write of a board's head: its keys (up to 128) and ladder samples (one every
    16 places past them, down to 1,536), so a small board's head is as small as its entries."""
    keys = min(members, HEAD_KEYS)
    ladder = max(0, min(members, HEAD_LADDER_REACH) - HEAD_KEYS) // LADDER_STEP
    size = min(HEAD_ITEM_BYTES, HEAD_FIXED_BYTES + (keys + ladder) * HEAD_ENTRY_BYTES)
    return max(1, math.ceil(size / WRITE_UNIT_BYTES))


def head_copies(head_rcu: float, board_rcu: float, safety: float = SAFETY_FRACTION) -> int:
    """The head's copies a board's reads need: none while the primary, on the board's own
    partition, takes the head's reads and the board items' within ``safety`` of a partition;
    past that the fewest copies each taking at most half of it (two may share a partition),
    up to HEAD_COPIES (past which the plan warns)."""
    limit = safety * PARTITION_RCU_PER_S
    if head_rcu + board_rcu <= limit:
        return 0
    return min(HEAD_COPIES, max(1, math.ceil(head_rcu / (limit / 2))))


def tree_height(members: int) -> int:
    """The nodes on a path from the root to a leaf: what one rank reads of the tree."""
    return len(tree_levels(members))


def crowding(nodes: int, keys: int = TREE_SPREAD, chance: float = TREE_CROWDING_CHANCE) -> int:
    """The most of ``nodes`` nodes, each on one of ``keys`` partition keys by a hash, that
    one key holds, but with a chance under ``chance``: the least m for which the chance that
    some key holds more than m, at most keys x C(nodes, m + 1) / keys^(m + 1), is under it."""
    most = min(1, nodes)
    while most < nodes and keys * math.comb(nodes, most + 1) / keys ** (most + 1) >= chance:
        most += 1
    return most


@dataclass(frozen=True)
class TreeLoad:
    """The read load of a board's count tree: the root's key, the busiest of the spread keys
    the other nodes lie under, and the busiest node under the root (one item serves at most
    a partition's RCU, whatever its key)."""

    total: float
    root: float
    busiest_key: float
    busiest_node: float


def tree_load(members: int, ranks_per_s: float, root_rcu: float) -> TreeLoad:
    """Every rank reads its path below the root: the nodes just under the root (each read
    by the ranks of its share of the members) and the levels below them, whose thousands of
    nodes spread evenly over the ``TREE_SPREAD`` keys. A key takes its share of those and
    the root's children hashed to it (``crowding``)."""
    levels = tree_levels(members)
    below = ranks_per_s * (len(levels) - 1) * TREE_NODE_RCU
    children = levels[-2] if len(levels) > 1 else 0
    child_rcu = ranks_per_s * TREE_NODE_RCU / children if children else 0.0
    rest = below - children * child_rcu
    busiest_key = rest / TREE_SPREAD + crowding(children) * child_rcu
    return TreeLoad(below + root_rcu, root_rcu, busiest_key, child_rcu)


def rank_rcu(members: int) -> tuple[float, float]:
    """One rank from the count tree: (total RCU, the tree's path RCU). The board and the
    member's score in one BatchGetItem, then the path's nodes in another, whatever the
    member's depth and the shard count: no shard is queried."""
    path = tree_height(members) * TREE_NODE_RCU
    return RANK_VIEW_RCU + path, path


def ranks_rcu(members: int, ids: int = 100) -> float:
    """The count of ``ids`` members' ranks (``POST .../ranks``) from the tree: the union of
    their paths, at most one node a member on each level (the upper levels are shared)."""
    return sum(min(ids, nodes) for nodes in tree_levels(members)) * TREE_NODE_RCU


def naive_rank_rcu(members: int, shards: int) -> float:
    """A rank by COUNT of every index key above the member (the reference pattern), for a
    member at the median."""
    return VIEW_RCU + MEMBER_SCORE_RCU + shards * query_rcu(members / 2 / shards)


def instances(reads_per_s: float, ms: float) -> float:
    """Warm instances a read rate keeps busy: rate x time per request (Little's law), and
    at least one while there are any reads."""
    return max(1.0, reads_per_s * ms / 1000) if reads_per_s > 0 else 0.0


def reaching(reads_per_s: float, busy: float, keep_s: float) -> float:
    """Of ``reads_per_s`` reads, how many a second read a kept item from DynamoDB: one per
    instance per ``keep_s`` at most, each instance keeping its own copy."""
    return reads_per_s if keep_s <= 0 else min(reads_per_s, busy / keep_s)


def bytes_per_member(data_bytes: int) -> int:
    return (
        (ITEM_OVERHEAD_BYTES + PROFILE_ITEM_BYTES + data_bytes)
        + (ITEM_OVERHEAD_BYTES + SCORE_ITEM_BYTES)
        + (ITEM_OVERHEAD_BYTES + INDEX_ENTRY_BYTES)
    )


def reshard_to(writes_per_s: float, shards: int, safety: float = SAFETY_FRACTION) -> int | None:
    """When to re-shard: the shard count a board of ``shards`` should move to, once its
    updates put more than ``safety`` of a GSI partition's 1,000 WCU/s on each shard; None
    while they do not (or when no count up to 100 would be enough: log events instead)."""
    needed = required_shards(writes_per_s, safety)
    return needed if shards < needed <= MAX_SHARDS else None


def upkeep(w: Workload, tree: TreeShape, copies: int) -> Upkeep:
    """What the stream consumers write for the board: its records come in batches of what one
    of the streamed table's shards gathers in the batching window, the board's share of it;
    the count tree's writes a change at that batch; the head written at most once a batch
    of each shard, to the primary and its copies."""
    table_records = w.writes_per_s if w.table_writes_per_s is None else w.table_writes_per_s
    streamed = table_records * TABLE_WCU_PER_UPDATE + w.events_per_s * EVENT_WCU
    shards = stream_shards(streamed)
    batch = batch_records(w.writes_per_s, table_records, shards)
    far, near = tree_far_wcu(w.members, batch, tree), tree_near_wcu(w.members, batch, tree)
    head_writes = min(w.writes_per_s * head_change_fraction(w.members), shards / STREAM_GATHER_S)
    return Upkeep(
        streamed_wcu=streamed,
        stream_shards=shards,
        batch_records=batch,
        tree_far_wcu=far,
        tree_near_wcu=near,
        consumer_wcu=stream_wcu_per_update(w.near_moves, far, near),
        head_writes_per_s=head_writes,
        head_item_wcu=head_item_wcu(w.members),
        head_copies=copies,
    )


def change_wcu(tree_wcu: float, head_wcu: float, writes_per_s: float) -> float:
    """Every write of one score change: its item and the index's delete and put, the count
    tree's share for its kind, the notifier's mark, and its share of the head's writes."""
    head_share = head_wcu / writes_per_s if writes_per_s else 0.0
    return TABLE_WCU_PER_UPDATE + INDEX_WCU_PER_UPDATE + tree_wcu + NOTIFIER_WCU_PER_UPDATE + head_share


def plan(workload: Workload, prices: Prices | None = None, tree: TreeShape = PLANNED_TREE) -> Plan:
    prices = prices or Prices()
    warnings: list[str] = []
    w = workload

    needed = required_shards(w.writes_per_s, w.safety)
    shards = w.shards if w.shards is not None else min(MAX_SHARDS, needed)
    over_capacity = needed > MAX_SHARDS
    capacity = max_writes_per_s(shards, w.safety)
    index_wcu = w.writes_per_s * INDEX_WCU_PER_UPDATE
    index_wcu_per_shard = index_wcu / shards
    if over_capacity:
        warnings.append(
            f"{w.writes_per_s:,.0f} updates/s need {needed} shards: {MAX_SHARDS} shards take "
            f"{max_writes_per_s(MAX_SHARDS, w.safety):,.0f}/s at {w.safety:.0%} of a partition. "
            "Log the updates (POST .../events): the fold moves each member's index entry once a "
            "batch, however many events it sums."
        )
    elif index_wcu_per_shard > w.safety * PARTITION_WCU_PER_S:
        warnings.append(
            f"{shards} shards take {index_wcu_per_shard:,.0f} index WCU/s each, over "
            f"{w.safety:.0%} of {PARTITION_WCU_PER_S:,}: the index throttles, and with it the table. "
            f"Re-shard the board to {needed} shards: podium boards reshard BOARD --shards {needed} "
            f"(moving a member costs about {RESHARD_WCU_PER_MEMBER} WCU: docs/capacity.md)."
        )

    index_wcu += w.events_per_s * LOG_INDEX_WCU_PER_EVENT

    from_head = w.head and w.k <= HEAD_SERVES_UP_TO
    top_rcu = VIEW_RCU + HEAD_ITEM_RCU if from_head else top_from_index_rcu(w.k, shards)
    top_reads = w.top_reads_per_s
    if w.cache_ttl_s > 0:
        top_reads = min(top_reads, w.cached_pages / w.cache_ttl_s)
    rank_total, path_rcu = rank_rcu(w.members)

    # Each instance keeps the board and count (tops) and the board and the tree's root
    # (ranks) for read_cache_s, the head (read from its own copy, not from B#{board}) for
    # read_cache_s but at most HEAD_KEEP_SECONDS, and every board's layout for
    # LAYOUT_CACHE_SECONDS. A top that finds the board kept and the head not reads the head
    # alone; one that finds neither reads them in one BatchGetItem.
    top_busy = instances(top_reads, TOP_READ_MS) if w.instances is None else w.instances
    rank_busy = instances(w.rank_reads_per_s, RANK_READ_MS) if w.instances is None else w.instances
    top_views = reaching(top_reads, top_busy, min(w.read_cache_s, HEAD_KEEP_SECONDS))
    top_boards = reaching(top_reads, top_busy, w.read_cache_s)
    rank_views = reaching(w.rank_reads_per_s, rank_busy, w.read_cache_s)
    # each instance reads a board's layout once in LAYOUT_CACHE_SECONDS, a read at most once
    top_layouts = reaching(top_reads, top_busy, LAYOUT_CACHE_SECONDS) * LAYOUT_RCU
    rank_layouts = reaching(w.rank_reads_per_s, rank_busy, LAYOUT_CACHE_SECONDS) * LAYOUT_RCU
    layouts = top_layouts + rank_layouts
    head_rcu = top_views * HEAD_ITEM_RCU
    top_table_rcu = top_boards * VIEW_RCU + head_rcu
    top_index_rcu = top_reads * (top_rcu - VIEW_RCU - HEAD_ITEM_RCU)
    rank_kept = rank_views * (RANK_BOARD_RCU + TREE_NODE_RCU)  # the board and the root
    rank_each = RANK_VIEW_RCU - RANK_BOARD_RCU + path_rcu - TREE_NODE_RCU  # score, path below root
    top_total = top_table_rcu + top_index_rcu + top_layouts
    rank_total_rcu = rank_kept + w.rank_reads_per_s * rank_each + rank_layouts
    table_rcu = top_total - top_index_rcu + rank_total_rcu + w.events_per_s * EVENT_RCU
    index_rcu = top_index_rcu
    index_rcu_per_shard = index_rcu / shards
    if index_rcu_per_shard > w.safety * PARTITION_RCU_PER_S:
        warnings.append(
            f"every top read from the index queries every shard: {index_rcu_per_shard:,.0f} RCU/s a "
            f"shard is over {w.safety:.0%} of {PARTITION_RCU_PER_S:,}. More shards help only until "
            "each query reads one block (0.5 RCU); serve top-k from the head, or cache the top "
            "pages (TopCacheTtlSeconds)."
        )
    board_rcu = top_boards * VIEW_RCU + rank_views * RANK_BOARD_RCU + layouts
    copies = head_copies(head_rcu, board_rcu, w.safety)
    if copies == 0:
        board_rcu += head_rcu  # the primary alone, on the board's partition
    keep = upkeep(w, tree, copies)
    head_wcu = keep.head_writes_per_s * keep.head_item_wcu * (1 + copies)
    table_wcu = w.writes_per_s * (TABLE_WCU_PER_UPDATE + keep.consumer_wcu) + head_wcu
    table_wcu += w.events_per_s * EVENT_WCU
    head_copy_rcu = head_rcu / max(1, copies)
    if copies and head_copy_rcu > w.safety * PARTITION_RCU_PER_S:
        warnings.append(
            f"each of the head's {copies} copies takes {head_copy_rcu:,.0f} RCU/s, over "
            f"{w.safety:.0%} of the {PARTITION_RCU_PER_S:,} one item serves: keep it longer in the "
            "functions (ReadCacheSeconds) or cache the top pages (TopCacheTtlSeconds)."
        )
    if board_rcu > w.safety * PARTITION_RCU_PER_S:
        warnings.append(
            f"the board's own items (B#{{board}}: board, count) take {board_rcu:,.0f} "
            f"RCU/s, over {w.safety:.0%} of one partition's {PARTITION_RCU_PER_S:,} (DynamoDB may split "
            "them by sort key, but no single item goes past it). Cache the top pages "
            "(TopCacheTtlSeconds), or keep the board longer in the functions (ReadCacheSeconds)."
        )
    root_rcu = rank_views * TREE_NODE_RCU
    reads = tree_load(w.members, w.rank_reads_per_s, root_rcu)
    if root_rcu > w.safety * PARTITION_RCU_PER_S:
        warnings.append(
            f"every rank reads the count tree's root: {w.rank_reads_per_s:,.0f} ranks/s take "
            f"{root_rcu:,.0f} RCU/s of that one item, over {w.safety:.0%} of the {PARTITION_RCU_PER_S:,} "
            "a partition (and so an item) serves. Keep it in the functions (ReadCacheSeconds), or "
            "read fewer ranks per board."
        )
    elif max(reads.busiest_key, reads.busiest_node) > w.safety * PARTITION_RCU_PER_S:
        warnings.append(
            f"the count tree's nodes below its root (T#{{board}}#{{period}}#{{n}}, {TREE_SPREAD} keys) "
            f"take {reads.total - root_rcu:,.0f} RCU/s, the busiest key about {reads.busiest_key:,.0f} "
            f"and the busiest node (under the root) {reads.busiest_node:,.0f}: over {w.safety:.0%} of "
            f"the {PARTITION_RCU_PER_S:,} a partition (and an item) serves. DynamoDB splits a hot "
            "key by sort key only after the load has lasted a while, and no item past it: read "
            "fewer ranks per board."
        )
    if w.events_per_s > 0:
        per_bucket = w.events_per_s * EVENT_BUCKET_WCU / EVENT_BUCKETS
        if per_bucket > w.safety * PARTITION_WCU_PER_S:
            warnings.append(
                f"{w.events_per_s:,.0f} events/s on one member take {per_bucket:,.0f} WCU/s per event "
                f"bucket; the ceiling is {EVENT_BUCKETS * PARTITION_WCU_PER_S / EVENT_BUCKET_WCU:,.0f} "
                "events/s a member (raise EVENT_BUCKETS)."
            )
        per_log_key = w.events_per_s * LOG_INDEX_WCU_PER_EVENT / EVENT_BUCKETS
        if per_log_key > w.safety * PARTITION_WCU_PER_S:
            warnings.append(
                f"{w.events_per_s:,.0f} events/s on one board take {per_log_key:,.0f} WCU/s per LogIndex "
                f"key; the ceiling is {EVENT_BUCKETS * PARTITION_WCU_PER_S / LOG_INDEX_WCU_PER_EVENT:,.0f} "
                "events/s a board (raise EVENT_BUCKETS)."
            )

    per_member = bytes_per_member(w.data_bytes)
    storage_gb = w.members * per_member / BYTES_PER_GB
    return Plan(
        shards=shards,
        required_shards=needed,
        over_capacity=over_capacity,
        max_writes_per_s=capacity,
        index_wcu_per_shard=index_wcu_per_shard,
        table_wcu=table_wcu,
        index_wcu=index_wcu,
        table_rcu=table_rcu,
        index_rcu=index_rcu,
        top_rcu_per_read=top_rcu,
        top_reads_to_dynamodb=top_views,
        rank_rcu_per_read=rank_total,
        naive_rank_rcu_per_read=naive_rank_rcu(w.members, shards),
        index_rcu_per_shard=index_rcu_per_shard,
        board_partition_rcu=board_rcu,
        head_item_rcu=head_rcu,
        read_instances=top_busy + rank_busy,
        tree_partition_rcu=reads.total,
        tree_root_rcu=root_rcu,
        tree_spread_rcu=reads.busiest_key,
        tree_node_rcu=reads.busiest_node,
        bytes_per_member=per_member,
        storage_gb=storage_gb,
        monthly_write_cost=(table_wcu + index_wcu) * SECONDS_PER_MONTH / 1e6 * prices.write_per_million,
        monthly_read_cost=(table_rcu + index_rcu) * SECONDS_PER_MONTH / 1e6 * prices.read_per_million,
        monthly_storage_cost=storage_gb * prices.storage_per_gb_month,
        monthly_cache_cost=prices.cache_per_hour * 730 if w.cache_ttl_s > 0 else 0.0,
        upkeep=keep,
        far_change_wcu=change_wcu(keep.tree_far_wcu, head_wcu, w.writes_per_s),
        near_change_wcu=change_wcu(keep.tree_near_wcu, head_wcu, w.writes_per_s),
        top_read_rcu=top_total / top_reads if top_reads else 0.0,
        rank_read_rcu=rank_total_rcu / w.rank_reads_per_s if w.rank_reads_per_s else 0.0,
        warnings=warnings,
    )
