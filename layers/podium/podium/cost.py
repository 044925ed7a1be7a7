"""What a read costs, by DynamoDB's billing rules, and the bound every request keeps to.

DynamoDB bills a read per 4 KB block of what it reads: 0.5 read unit (RCU) a block when
eventually consistent, 1 when strongly consistent, and one block at the least (a read that
finds nothing costs the minimum). A query adds up the sizes of the items it reads (a
``COUNT`` too) and rounds once; a GetItem, and each key of a BatchGetItem, rounds each item.
An item's size is the lengths of its attribute names and values.

The service plans its reads with these rules: a rank's count reads the count tree's paths
or the index, whichever is expected to cost less (``podium.indexreads``), a page with
data stops before its reads pass the bound (``podium.reads``), a fresh read refuses
rather than read past it (``podium.events``). The figures are estimates from the keys at
hand (the index entries' sizes are guessed from the keys a read has, not read); ``make
bench`` measures what DynamoDB bills (docs/capacity.md, "Every request bounded in cost").
"""

from __future__ import annotations

import math

from podium import counttree, treebuild

READ_BOUND = 500.0  # the most read units one request should read
BLOCK_BYTES = 4096
MEMBER_ID_GUESS = 16  # the length of a member id the read has not seen
# A ranking index entry holds the index's keys (rpk, rsk) and the table's (pk = M#{board}#{member},
# sk = SCORE#{period}): the attribute names and the keys' fixed parts come to about this.
ENTRY_FIXED_BYTES = 22


def units(size: float, *, consistent: bool = False) -> float:
    """What reading ``size`` bytes in one request (a query, or one item) is billed."""
    blocks = max(1, math.ceil(size / BLOCK_BYTES))
    return blocks * (1.0 if consistent else 0.5)


def spread_units(entries: float, shards: int, entry_bytes: float) -> float:
    """What one query on each of ``shards`` shards costs when together they read
    ``entries`` index entries spread evenly over them (the member's shard is a hash)."""
    return shards * units(entries / shards * entry_bytes)


def entry_bytes(board_id: str, period: str, partition: str, keys: list[str]) -> float:
    """The mean size of the ranking index entries near ``keys``: sort keys, whose member id
    is their last part, or score bounds (ending in ``#``), whose member ids are guessed."""
    fixed = ENTRY_FIXED_BYTES + len(partition) + len(board_id) + len(period)
    sizes = []
    for key in keys or ["0" * 24 + "#"]:
        member = len(key.rsplit("#", 1)[-1].strip()) or MEMBER_ID_GUESS
        # the sort key (with its member id) and the table's key (which repeats the member id)
        sizes.append(fixed + len(key) + member + (member if key.endswith("#") else 0))
    return sum(sizes) / len(sizes)


def upper_units(queries: int, size: float) -> float:
    """At most what ``queries`` queries reading ``size`` bytes together are billed (each
    query rounds up by less than one block: ``0.5 · ceil(b / 4096) <= 0.5 + b / 8192``)."""
    return 0.5 * queries + size / (2 * BLOCK_BYTES)


def tree_levels(members: int) -> list[int]:
    """The nodes of each level of a count tree of ``members`` as a build lays it out
    (``podium.treebuild``: nodes ``BUILD_FILL`` full), from the leaves up to the root. A
    tree grown by inserts holds a little less in each node (between half and all of its
    limits), so it may be a level taller."""
    per_leaf = max(1, int(counttree.LEAF_MAX * treebuild.BUILD_FILL))
    per_node = max(2, int(counttree.FANOUT * treebuild.BUILD_FILL))
    levels = [max(1, math.ceil(members / per_leaf))]
    while levels[-1] > 1:
        levels.append(math.ceil(levels[-1] / per_node))
    return levels


def path_items(members: int, bounds: int) -> int:
    """The count tree's nodes a count of ``bounds`` distinct bounds reads: on every level one
    node per bound, up to the nodes of the level (the paths share their upper levels)."""
    return sum(min(max(1, bounds), nodes) for nodes in tree_levels(members))


def path_units(members: int, bounds: int, *, consistent: bool = False) -> float:
    """What those nodes are billed: each is one item of one 4 KB block at most (a node is
    split past ``counttree.NODE_BYTES``), read in BatchGetItems."""
    return path_items(members, bounds) * units(counttree.NODE_BYTES, consistent=consistent)
