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
# measured: the stream consumer's writes for one score change (the count tree's leaf writes
# and reports, the counts, the head) on a board much larger than a batch:
# `make bench-treewrites` (bench/treewrites.py: 1,000,000 members, 1,000 changes of each
# kind; docs/capacity.md, "What a score change writes"). A far move (a random new score:
# the member changes leaves) writes two leaves of 1 to 2 KB and a report a level up each
# side: 16.1 WCU a record applied alone, 9.6 in batches of 100, 6.8 in batches of 1,000
# (the reports of a batch share the upper levels). A near move (one point up: the member
# stays in its leaf) writes its leaf: 2.5. The planner takes batches of 100: at thousands
# of updates a second the table's partitions, and its stream's shards, number in the tens,
# each handing the consumer a hundred or so records a second. Changes that crowd into the
# same nodes cost less (`make bench`'s hot board, two thirds of its changes into or out
# of the top: about 2 WCU a record).
TREE_WCU_FAR_MOVE = 9.6
TREE_WCU_NEAR_MOVE = 2.5
# the notifier's mark of each score record judged for the leader (under 1 KB), so that a
# record delivered again is not judged again (docs/streams.md)
NOTIFIER_WCU_PER_UPDATE = 1
# estimate: share of score changes that move a key into, out of or within the head and its
# ladder (the top 1,536), each of which rewrites the head item.
HEAD_CHANGE_FRACTION = 0.1
# estimate: the aggregator writes a board's head at most once a batch; batches reach it
# about once a second from each of ~10 stream shards.
HEAD_WRITES_MAX_PER_S = 10.0
# estimate: 128 sort keys and 88 ladder samples, compressed (1.8 KB with 14-character
# member ids, 5.9 KB with 36-character UUIDs: `make bench`, docs/benchmarks.md)
HEAD_ITEM_BYTES = 4_096
# podium.dal.schema.HEAD_COPIES: the head's copies, each on a partition key of its own
# (H#{board}#{copy}), which top reads read instead of the primary head on B#{board}; every
# head write puts the primary and then each copy (1 + HEAD_COPIES item writes).
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
# (podium.treebuild.BUILD_FILL), a leaf of 24 members at most (podium.counttree.LEAF_MAX),
# an inner node of 32 children (podium.counttree.FANOUT). A tree grown by inserts holds a
# little less a node, and may be a level taller.
TREE_LEAF_MEMBERS = 18
TREE_FANOUT = 24
TREE_NODE_RCU = 0.5  # a node stays under 4 KB (split past about 2 KB): one block, eventually consistent
# The partition keys a tree's nodes below the root are spread over (podium.dal.schema.TREE_SPREAD:
# T#{board}#{period}#{n}, n a hash of the node's sort key); the root keeps T#{board}#{period}.
TREE_SPREAD = 64
# The nodes just under the root are the busiest below it, and are hashed like the others:
# the planner counts as many of them on one key as can share one but with a chance under this.
TREE_CROWDING_CHANCE = 0.01

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
    # (small increments on a big board); the rest move far (TREE_WCU_FAR_MOVE)
    near_moves: float = 0.0


def stream_wcu_per_update(near_moves: float) -> float:
    """What the stream consumers write for a score update, when ``near_moves`` of them
    stay in their leaf of the count tree and the rest move far: the aggregator's share and
    the notifier's mark."""
    tree = near_moves * TREE_WCU_NEAR_MOVE + (1 - near_moves) * TREE_WCU_FAR_MOVE
    return tree + NOTIFIER_WCU_PER_UPDATE


@dataclass(frozen=True)
class Prices:
    write_per_million: float = WRITE_PRICE_PER_MILLION
    read_per_million: float = READ_PRICE_PER_MILLION
    storage_per_gb_month: float = STORAGE_PRICE_PER_GB_MONTH
    cache_per_hour: float = CACHE_PRICE_PER_HOUR


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
    warnings: list[str] = field(default_factory=list)

    @property
    def head_copy_rcu(self) -> float:
        """One copy's share of the head's reads (each copy has a partition key of its own)."""
        return self.head_item_rcu / HEAD_COPIES

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


def tree_levels(members: int) -> list[int]:
    """The nodes of each level of a board's count tree, from the leaves up to the root."""
    levels = [max(1, math.ceil(members / TREE_LEAF_MEMBERS))]
    while levels[-1] > 1:
        levels.append(math.ceil(levels[-1] / TREE_FANOUT))
    return levels


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


def plan(workload: Workload, prices: Prices | None = None) -> Plan:
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

    head_writes = min(w.writes_per_s * HEAD_CHANGE_FRACTION, HEAD_WRITES_MAX_PER_S)
    head_wcu = head_writes * math.ceil(HEAD_ITEM_BYTES / WRITE_UNIT_BYTES) * (1 + HEAD_COPIES)
    stream_wcu = stream_wcu_per_update(w.near_moves)
    table_wcu = w.writes_per_s * (TABLE_WCU_PER_UPDATE + stream_wcu) + head_wcu
    table_wcu += w.events_per_s * EVENT_WCU
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
    top_busy = instances(top_reads, TOP_READ_MS)
    rank_busy = instances(w.rank_reads_per_s, RANK_READ_MS)
    top_views = reaching(top_reads, top_busy, min(w.read_cache_s, HEAD_KEEP_SECONDS))
    top_boards = reaching(top_reads, top_busy, w.read_cache_s)
    rank_views = reaching(w.rank_reads_per_s, rank_busy, w.read_cache_s)
    layouts = (top_busy + rank_busy) / LAYOUT_CACHE_SECONDS * LAYOUT_RCU
    head_rcu = top_views * HEAD_ITEM_RCU
    head_copy_rcu = head_rcu / HEAD_COPIES
    top_table_rcu = top_boards * VIEW_RCU + head_rcu
    top_index_rcu = top_reads * (top_rcu - VIEW_RCU - HEAD_ITEM_RCU)
    rank_kept = rank_views * (RANK_BOARD_RCU + TREE_NODE_RCU)  # the board and the root
    rank_each = RANK_VIEW_RCU - RANK_BOARD_RCU + path_rcu - TREE_NODE_RCU  # score, path below root
    table_rcu = top_table_rcu + rank_kept + w.rank_reads_per_s * rank_each + layouts
    table_rcu += w.events_per_s * EVENT_RCU
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
    if head_copy_rcu > w.safety * PARTITION_RCU_PER_S:
        warnings.append(
            f"each of the head's {HEAD_COPIES} copies takes {head_copy_rcu:,.0f} RCU/s, over "
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
    tree = tree_load(w.members, w.rank_reads_per_s, root_rcu)
    if root_rcu > w.safety * PARTITION_RCU_PER_S:
        warnings.append(
            f"every rank reads the count tree's root: {w.rank_reads_per_s:,.0f} ranks/s take "
            f"{root_rcu:,.0f} RCU/s of that one item, over {w.safety:.0%} of the {PARTITION_RCU_PER_S:,} "
            "a partition (and so an item) serves. Keep it in the functions (ReadCacheSeconds), or "
            "read fewer ranks per board."
        )
    elif max(tree.busiest_key, tree.busiest_node) > w.safety * PARTITION_RCU_PER_S:
        warnings.append(
            f"the count tree's nodes below its root (T#{{board}}#{{period}}#{{n}}, {TREE_SPREAD} keys) "
            f"take {tree.total - root_rcu:,.0f} RCU/s, the busiest key about {tree.busiest_key:,.0f} "
            f"and the busiest node (under the root) {tree.busiest_node:,.0f}: over {w.safety:.0%} of "
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
        tree_partition_rcu=tree.total,
        tree_root_rcu=root_rcu,
        tree_spread_rcu=tree.busiest_key,
        tree_node_rcu=tree.busiest_node,
        bytes_per_member=per_member,
        storage_gb=storage_gb,
        monthly_write_cost=(table_wcu + index_wcu) * SECONDS_PER_MONTH / 1e6 * prices.write_per_million,
        monthly_read_cost=(table_rcu + index_rcu) * SECONDS_PER_MONTH / 1e6 * prices.read_per_million,
        monthly_storage_cost=storage_gb * prices.storage_per_gb_month,
        monthly_cache_cost=prices.cache_per_hour * 730 if w.cache_ttl_s > 0 else 0.0,
        warnings=warnings,
    )
