"""Score buckets: rank on a board of any size in a bounded number of reads.

Rank by COUNT (the reference pattern) reads every index entry above a member: a member
ranked 1,000,000th costs thousands of RCU. Instead the aggregating stream consumer keeps,
per board and period, a partition of the index's sort-key space into *buckets* (ranges
``[lo, next bucket's lo)``), each with the number of members whose sort key falls in it.
A rank is then

    1 + (the counts of the buckets above the member's bucket)
      + COUNT(index entries in the member's bucket that are better than the member)

which reads the bucket items up to the member's bucket (one query) and at most one
bucket's worth of index keys per shard (one round of queries), however deep the rank.

**Re-splitting.** A bucket that grows past ``SPLIT_AT`` members is split at its median
key. The two halves are counted from the index at that moment (``counted_at``), so each
half's count is a *snapshot* of the index plus the changes applied after it.

**Exactness.** A bucket's count must equal the number of index entries in its range. A
change of a member's sort key reaches the buckets through the stream, after the index
already shows it. When a change is applied to a bucket, it is compared with the bucket's
snapshot time: a change written after the snapshot is not in it (apply it); a change
written more than ``INDEX_LAG`` before is in it already (skip it); a change written in
between may or may not be, so the bucket is marked *dirty*. A rank never trusts a dirty
bucket's count: it counts that bucket's range in the index instead (exact, a little more
read), and the consumer re-counts dirty buckets once they have been quiet. Ranks are exact
as of the changes the stream has applied, like ``total``; ``consistent=true`` counts the
whole index instead.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

SPLIT_AT = 1024  # a bucket past this many members is split at its median
REBUILD_SIZE = 768  # members per bucket when rebuilt from the index: between a split's halves and SPLIT_AT
INDEX_LAG_US = 1_000_000  # how far the index may trail a write (DynamoDB: "typically < 1 s")
RECOUNT_QUIET_US = 2_000_000  # a dirty bucket is re-counted when no change reached it for this long
BELOW_EVERY_KEY = ""  # the first bucket's lower bound


@dataclass(frozen=True)
class Bucket:
    lo: str  # the lowest sort key the bucket holds
    count: int
    epoch: int  # changes when the bucket's range or snapshot changes (split, re-count)
    # When ``count`` was read from the index: the snapshot holds every write before
    # ``snapshot_from_us - INDEX_LAG_US`` and none after ``snapshot_to_us``. Both are 0 for a
    # bucket the stream has counted from empty.
    snapshot_from_us: int = 0
    snapshot_to_us: int = 0
    dirty: bool = False
    last_change_us: int = 0  # the latest write time of a change applied to the bucket


def just_below(key: str) -> str:
    """The greatest string that sorts below ``key`` among index sort keys, for an
    inclusive ``BETWEEN``: sort keys are ASCII, so after the lowered last character a
    single U+10FFFF (the highest code point, and the highest UTF-8 bytes) outranks
    whatever follows in any key."""
    if not key:
        raise ValueError("no key sorts below the empty string")
    return key[:-1] + chr(ord(key[-1]) - 1) + "\U0010ffff"


def just_above(key: str) -> str:
    """A string above ``key`` with no index sort key between them, for an exclusive lower
    end of a ``BETWEEN``: a key that sorts above ``key`` either differs from it at some
    character or extends it, and every character of a sort key is above the space."""
    return key + " "


def locate(buckets: Sequence[Bucket], key: str) -> int:
    """The index of the bucket whose range holds ``key`` (buckets sorted by ``lo``, the
    first one starting below every key)."""
    position = bisect_right([b.lo for b in buckets], key) - 1
    if position < 0:
        raise ValueError("the first bucket must start below every key")
    return position


def upper_bound(buckets: Sequence[Bucket], index: int) -> str | None:
    """The exclusive upper end of bucket ``index`` (None for the last bucket)."""
    return buckets[index + 1].lo if index + 1 < len(buckets) else None


APPLY, SKIP, DIRTY = "apply", "skip", "dirty"


def classify(bucket: Bucket, written_from_us: int, written_to_us: int) -> str:
    """What to do with a change written at some time in ``[written_from_us, written_to_us]``
    that reaches ``bucket``: apply it, skip it (the bucket's snapshot holds it), or mark the
    bucket dirty (the snapshot may or may not hold it)."""
    if bucket.snapshot_to_us == 0 or written_from_us > bucket.snapshot_to_us:
        return APPLY
    if written_to_us < bucket.snapshot_from_us - INDEX_LAG_US:
        return SKIP
    return DIRTY


def snapshot_is_clean(last_change_us: int, snapshot_from_us: int) -> bool:
    """Whether a count read from the index starting at ``snapshot_from_us`` holds every
    change the stream applied to the bucket before it (each change was written before it
    was applied, and the index shows a write within ``INDEX_LAG_US``)."""
    return last_change_us < snapshot_from_us - INDEX_LAG_US


@dataclass(frozen=True)
class RankPlan:
    """How to count the members better than a bound: the trusted counts of the buckets
    above, plus index ranges ``(lo, hi)`` to COUNT (``hi`` inclusive; None is open)."""

    counted: int
    ranges: list[tuple[str, str | None]]


def plan_counts(buckets: Sequence[Bucket], bounds: Sequence[str]) -> list[RankPlan]:
    """For each bound, the plan that counts the index entries strictly below it.

    ``buckets`` are the board's buckets from the first one up to (at least) the bucket
    holding the greatest bound. A dirty bucket above a bound is counted in the index."""
    plans = []
    for bound in bounds:
        own = locate(buckets, bound)
        counted = 0
        ranges: list[tuple[str, str | None]] = []
        for index in range(own):
            bucket = buckets[index]
            if bucket.dirty:
                high = upper_bound(buckets, index)
                assert high is not None
                ranges.append((bucket.lo, just_below(high)))
            else:
                counted += bucket.count
        if bound > buckets[own].lo:
            ranges.append((buckets[own].lo, just_below(bound)))
        plans.append(RankPlan(counted, ranges))
    return plans


def median_split(keys: Sequence[str]) -> tuple[str, int, int] | None:
    """Where to split a bucket holding the sorted ``keys``: the median key (the new
    bucket's ``lo``) and the counts of the two halves; None when it cannot split."""
    if len(keys) < 2:
        return None
    middle = len(keys) // 2
    return keys[middle], middle, len(keys) - middle


def cut(keys: Sequence[str], size: int = REBUILD_SIZE) -> list[tuple[str, int]]:
    """Buckets of ``size`` members over the sorted ``keys`` of a whole board, as
    ``(lo, count)``; the first starts below every key."""
    buckets: list[tuple[str, int]] = []
    for start in range(0, max(len(keys), 1), size):
        lo = BELOW_EVERY_KEY if start == 0 else keys[start]
        buckets.append((lo, len(keys[start : start + size])))
    return buckets
