"""The ranking indexes a board's score items are keyed in, and where a re-shard's walk
has got to: shared vocabulary of the domain and the data-access layer (podium.models
re-exports it)."""

from __future__ import annotations

from podium.values import frozen

# The two ranking indexes a board's score items may be keyed in: "A" (``RankIndex``, ``rpk``)
# and "B" (``RankIndexB``, ``rpkB``). A board reads one; a re-shard builds the other and
# switches to it (podium.layouts). A partition key names its index: B's shards end "#B{n}"
# (podium.keys), so the data-access layer knows which index to query from the key alone.
RANK_INDEXES = ("A", "B")
SHARD_MARK = {"A": "", "B": "B"}


def index_of_partition(partition: str) -> str:
    """The index a partition key belongs to (ids hold no ``#``: the last part is the shard's)."""
    return "B" if partition.rsplit("#", 1)[1].startswith(SHARD_MARK["B"]) else "A"


def other_index(index: str) -> str:
    return "B" if index == "A" else "A"


@frozen
class Checkpoint:
    """Where a re-shard's walk (its copy, then its clean-up) has got to: the period, the
    old index's shard, and the last sort key of that shard dealt with (None: from its top)."""

    period: str
    shard: int
    after: str | None = None
